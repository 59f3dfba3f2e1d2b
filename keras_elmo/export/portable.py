"""The biLM as a plain function of character ids, for the ONNX and LiteRT
converters (`keras_elmo.export.onnx`, `keras_elmo.export.litert`).

Neither converter can use the string-input SavedModel (string ops), and
passing the Keras layer itself as the TFLite converter's `trackable_obj`
gives a model without weights that returns NaN without an error. Both read
instead a `tf.Module` that holds a frozen float32 copy of the biLM
(`frozen_bilm`) and one `tf.function` over character ids with the inputs
and outputs of `elmo_core.formats.exported_file`, which also defines the
metadata every exported file carries (`metadata` here fills it in).
"""

import numpy as np
import tensorflow as tf

from elmo_core.characters import MAX_CHARACTERS_PER_TOKEN
from elmo_core.errors import KerasElmoError
from elmo_core.formats import exported_file
from elmo_core.formats.exported_file import INPUT_NAME
from elmo_core.formats.exported_file import MASK_NAME
from elmo_core.formats.exported_file import MIX_NAME
from elmo_core.formats.exported_file import layer_name
from keras_elmo.export.frozen_bilm import frozen_bilm


def check_bilm(bilm, fmt):
    """Refuses what the exports do not cover, before any work."""
    from keras_elmo.layers.bilm import BiLM

    if not isinstance(bilm, BiLM):
        raise KerasElmoError(
            f"{fmt} export needs a keras_elmo.layers.BiLM, or a keras.Model "
            "holding ELMo, as `model`. Load a biLM with keras_elmo.load_bilm, "
            "or pass the model (wrap a layer in keras.Model(inputs, "
            "outputs)).",
            "model",
            received=bilm,
        )
    encoder = getattr(bilm, "token_encoder", "characters")
    if encoder != "characters":
        raise KerasElmoError(
            f"{fmt} export of a biLM alone takes character ids; this biLM "
            f"reads {encoder!r} (token_encoder={encoder!r}). Export a "
            "character biLM, a whole keras.Model holding this one "
            "(ELMoEmbedding(bilm, vocabulary=...)), or use keras-elmo "
            "export-savedmodel.",
            "model",
        )
    if not bilm.built:
        bilm.build()


def scalar_mix_layer(scalar_mix, num_layers, fmt):
    """A built float32 `ScalarMix` from a ScalarMix or a list of weights."""
    from keras_elmo.layers.scalar_mix import ScalarMix

    if scalar_mix is None:
        return None
    if isinstance(scalar_mix, ScalarMix):
        if not scalar_mix.built:
            raise KerasElmoError(
                f"{fmt} export: the ScalarMix is not built (it has no "
                "weights yet); call it on the biLM layers or train it first.",
                "scalar_mix",
            )
        if scalar_mix.layer_norm_rule != "bilm-tf":
            raise KerasElmoError(
                f"{fmt} export: a ScalarMix with layer_norm_rule="
                f"{scalar_mix.layer_norm_rule!r} needs the <S>/</S> "
                "positions, which the export strips; export one with "
                "layer_norm_rule='bilm-tf'.",
                "scalar_mix",
            )
        config = dict(scalar_mix.get_config(), dtype="float32")
        weights = [np.asarray(w, "float32") for w in scalar_mix.get_weights()]
    else:
        from elmo_core.errors import check_numbers

        weights = check_numbers(
            scalar_mix,
            "scalar_mix",
            where=f"{fmt} export: `scalar_mix`",
            count=num_layers,
            one_per="biLM layer",
        )
        config = {"initial_scalar_weights": weights, "dtype": "float32"}
        weights = None
    if weights is not None and not all(np.isfinite(w).all() for w in weights):
        raise KerasElmoError(
            f"{fmt} export: the ScalarMix has weights that are NaN or "
            "infinite (a diverged training?); the export would output NaN.",
            "scalar_mix",
        )
    if weights is not None and weights[0].shape != (num_layers,):
        raise KerasElmoError(
            f"{fmt} export: the ScalarMix mixes {weights[0].shape[0]} "
            f"layers but the biLM has {num_layers}; use the mix trained "
            "with this biLM.",
            "scalar_mix",
        )
    mix = ScalarMix.from_config(config)
    # Raises a KerasElmoError when a list has the wrong number of weights.
    mix.build([(None, None, None)] * num_layers)
    if weights is not None:
        mix.set_weights(weights)
    return mix


class CharacterIdModel(tf.Module):
    """The frozen biLM (and optional scalar mix) as `embed(character_ids)`.

    Args:
        bilm: a built `keras_elmo.layers.BiLM`.
        deduplicate_tokens: bool. Run the token encoder once per distinct
            token (needs the converter to map `UniqueV2`).
        scalar_mix: None, a built `ScalarMix`, or a list of floats (the
            mix's scalar weights, softmax-normalised, gamma 1).
        fmt: str. The export's name, for error messages.
        pad_empty_batches: bool. Run a batch without rows or positions on
            one padding row and position (for ONNX Runtime).
        batch_size: int or None. A fixed batch size (LiteRT's fused LSTM
            kernels need one), or None for any.
    """

    def __init__(
        self,
        bilm,
        deduplicate_tokens,
        scalar_mix=None,
        fmt="",
        pad_empty_batches=False,
        batch_size=None,
    ):
        super().__init__()
        shape = (batch_size, None, MAX_CHARACTERS_PER_TOKEN)
        signature = [tf.TensorSpec(shape, tf.int32, name=INPUT_NAME)]
        self.embed = tf.function(self._embed, input_signature=signature)
        self.pad_empty_batches = bool(pad_empty_batches)
        self.bilm = frozen_bilm(
            bilm, deduplicate_tokens=bool(deduplicate_tokens)
        )
        self.num_outputs = self.bilm.num_layers + 1
        self.scalar_mix = scalar_mix_layer(scalar_mix, self.num_outputs, fmt)
        # Tracked as plain variables so that the converters see them.
        self.weights = [w.value for w in self.bilm.weights]
        if self.scalar_mix is not None:
            self.weights += [w.value for w in self.scalar_mix.weights]

    def _embed(self, character_ids):
        if not self.pad_empty_batches:
            return self._outputs(character_ids)
        # ONNX Runtime returns an empty input of ReduceSum unreduced, which
        # breaks the graph on a batch without rows or positions: such a
        # batch gets one all-padding row and position, cut off again.
        # (LiteRT runs such batches as they are, and refuses to return
        # the sliced empty outputs.)
        shape = tf.shape(character_ids)
        batch, time = shape[0], shape[1]
        pads = tf.maximum(1 - shape[:2], 0)
        ids = tf.pad(character_ids, [[0, pads[0]], [0, pads[1]], [0, 0]])
        outputs = self._outputs(ids)
        return {name: x[:batch, :time] for name, x in outputs.items()}

    def _outputs(self, ids):
        outputs = self.bilm(ids, training=False)
        layers = outputs["layer_outputs"]
        result = {layer_name(i): x for i, x in enumerate(layers)}
        result[MASK_NAME] = outputs["mask"]
        if self.scalar_mix is not None:
            result[MIX_NAME] = self.scalar_mix(layers, mask=outputs["mask"])
        return result

    def output_names(self):
        return exported_file.output_names(
            self.bilm.num_layers, self.scalar_mix is not None
        )


def metadata(bilm, kind, precision, **options):
    """The metadata dict of an export of `bilm` (see `exported_file`)."""
    from elmo_core.formats.bilm_tf_options import config_to_options

    return exported_file.metadata(
        kind,
        precision,
        num_layers=bilm.num_layers,
        projection_dim=bilm.projection_dim,
        bilm_options=config_to_options(bilm),
        **options,
    )

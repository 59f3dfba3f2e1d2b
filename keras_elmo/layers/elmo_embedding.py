import keras
from keras import ops

from elmo_core.errors import BiLMSourceError
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_flag
from elmo_core.errors import check_fraction
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.errors import check_numbers
from elmo_core.errors import tensor
from elmo_core.errors.blame import about
from elmo_core.ids.host_ids import host_inputs
from elmo_core.ids.vocabulary import check_vocabulary
from elmo_core.settings.limits import MAX_LAYERS
from keras_elmo.layers import backends
from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.keras_export import refuse_keras_export
from keras_elmo.layers.scalar_mix import ScalarMix
from keras_elmo.layers.validation import check_batch_structure
from keras_elmo.layers.validation import keras_layer_config


def _is_string(inputs):
    dtype = getattr(inputs, "dtype", None)
    return dtype is not None and "string" in str(dtype)


def _as_bilm(bilm, dtype=None):
    """The `BiLM` the `bilm` argument names: a BiLM, its serialized
    config, or a biLM source string (loaded in `dtype`, the layer's
    own `dtype` when given, else the global policy: never the precision
    a run was trained in)."""
    if isinstance(bilm, dict):
        bilm = keras_layer_config(bilm, "bilm")
    elif isinstance(bilm, str):
        # Any biLM source: a pretrained model name such as "original",
        # a URL, a folder or files. The one import of this package's
        # layers above layers/ (tests/test_import_graph.py names it):
        # the resolver imports the loaders, which import the layers.
        bilm = _load_source(bilm, dtype)
    if not isinstance(bilm, BiLM):
        raise KerasElmoError(
            "`bilm` must be a keras_elmo.layers.BiLM, e.g. "
            "keras_elmo.load_bilm(options_file, weight_file), or a "
            'pretrained model name such as "original" (`keras-elmo '
            "presets` lists them).",
            "bilm",
            received=bilm,
        )
    return bilm


def _word_lookup(bilm, vocabulary):
    """`(tokens, lookup table)` of a word-input biLM's vocabulary, checked;
    `(None, None)` without one."""
    if vocabulary is None:
        return None, None
    if not bilm.encoder.needs_vocabulary:
        raise KerasElmoError(
            "`vocabulary` is for word-input biLMs; this biLM reads "
            f"{bilm.token_encoder} and takes any token. Drop it."
        )
    from keras_elmo.data.word_ids import lookup_table  # TensorFlow's

    vocabulary = check_vocabulary(vocabulary, bilm.encoder)
    return list(vocabulary.tokens), lookup_table(vocabulary)


def _load_source(source, dtype=None):
    """`load_bilm(source)` (in `dtype`, if given); its errors are about
    `bilm` and say what it may be."""
    from keras_elmo.loading import classify

    kwargs = {} if dtype is None else {"dtype": dtype}
    try:
        with about("bilm"):
            return classify(source, argument="bilm").load_bilm(**kwargs)
    except BiLMSourceError as error:
        raise BiLMSourceError(
            "`bilm` must be a keras_elmo.layers.BiLM, e.g. "
            "keras_elmo.load_bilm(options_file, weight_file), or a biLM "
            "source keras_elmo.load_bilm accepts; as a source: "
            f"{error.message}",
            "bilm",
            received=source,
        ) from None


@keras.saving.register_keras_serializable(package="keras_elmo")
class ELMoEmbedding(keras.layers.Layer):
    """Drop-in ELMo: tokens (or character ids) in, mixed ELMo vectors out.

    Runs a `BiLM` once and mixes its layers with one or more independent
    `ScalarMix`es, then applies dropout. Use it as the embedding layer of a
    task model; the Keras mask it returns lets downstream layers (e.g.
    `keras.layers.Bidirectional(keras.layers.LSTM(...))`) skip padding.

    The biLM weights are frozen unless `fine_tune=True`; the mix weights and
    `gamma` are trained with the task unless `scalar_mix_weights` fixes them.

    Masking: the mask is computed from the input (a non-empty string, a
    token with any non-zero character id, or a non-zero word id) and
    returned by `compute_mask`. Outputs at padding positions are zero.

    With a word-input biLM (`token_encoder="words"`), string tokens are
    looked up in its `vocabulary` in the graph (a `tf.lookup`
    table; unknown words read as `<UNK>`), so the model still takes raw
    tokens.

    Args:
        bilm: a `keras_elmo.layers.BiLM` (e.g. from `keras_elmo.load_bilm`),
            or any source `keras_elmo.load_bilm` accepts as one string (a
            pretrained model name such as `"original"`, a URL, a folder or
            a `.keras` file), which is loaded with it: in the layer's
            `dtype` when one is given, else in the global Keras policy
            (float32 unless set), never in the precision a training run
            was trained in.
        num_output_representations: int. Number of independent mixes (at
            most 256); with more than one the layer returns a list.
            Defaults to `1`.
        dropout: float. Dropout on each mixed output. Defaults to `0.5`.
        l2_coef: float. L2 penalty on each mix's scalar weights. Defaults
            to `0.0` (the paper uses 0.001).
        do_layer_norm: bool. Layer-normalise the biLM layers before mixing.
            Defaults to `False`.
        layer_norm_rule: str. Which positions the layer norm's statistics
            cover: `"bilm-tf"`, the tokens only (as bilm-tf); `"allennlp"`,
            the tokens and each sentence's `<S>`/`</S>` (as AllenNLP's
            `Elmo`, whose numbers it then reproduces). Only matters with
            `do_layer_norm=True`. Defaults to `"bilm-tf"`.
        top_layer_only: bool. Use only the top biLM layer. Defaults to
            `False`.
        scalar_mix_weights: list of floats or None. Fixed (non-trainable)
            mix weights, one per biLM layer; `gamma` is then fixed at 1.
            Defaults to `None` (learned).
        fine_tune: bool. Train the biLM weights too. Defaults to `False`.
        vocabulary: for a word-input biLM, its vocabulary (list of str, a
            `elmo_core.ids.Vocabulary` or a vocab file path; `<S>`,
            `</S>` first), needed for string input. Saved in the config as
            a list. Defaults to `None`.

    Call arguments:
        inputs: `tf.string` tensor `(batch, time)` of tokens, `""` marking
            padding; or int character ids `(batch, time, 50)`; or, for a
            word-input biLM, int word ids `(batch, time)`.
        training: bool. Enables dropout.

    Returns:
        Float tensor `(batch, time, 2 * bilm.projection_dim)`, or a list of
        `num_output_representations` of them.

    Example:

    >>> bilm = keras_elmo.layers.BiLM(
    ...     filters=[[1, 4], [2, 8]], char_embedding_dim=4,
    ...     num_highway_layers=1, units=16, projection_dim=8)
    >>> tokens = keras.Input(shape=(None,), dtype="string")
    >>> x = keras_elmo.layers.ELMoEmbedding(bilm)(tokens)
    >>> x = keras.layers.Bidirectional(keras.layers.LSTM(4))(x)
    >>> model = keras.Model(tokens, keras.layers.Dense(2)(x))
    >>> model(tf.constant([["Hello", "world"], ["Hi", ""]])).shape
    TensorShape([2, 2])

    Reference:
        Peters et al. 2018, "Deep contextualized word representations".
    """

    def __init__(
        self,
        bilm,
        num_output_representations=1,
        dropout=0.5,
        l2_coef=0.0,
        do_layer_norm=False,
        top_layer_only=False,
        scalar_mix_weights=None,
        fine_tune=False,
        layer_norm_rule="bilm-tf",
        vocabulary=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        bilm = _as_bilm(bilm, kwargs.get("dtype"))
        self.bilm = bilm
        # Each is a ScalarMix layer made here (see layers/limits.py).
        self.num_output_representations = check_integer(
            num_output_representations,
            "num_output_representations",
            minimum=1,
            maximum=MAX_LAYERS,
        )
        self.dropout = check_fraction(dropout, "dropout")
        self.l2_coef = check_number(l2_coef, "l2_coef", minimum=0.0)
        self.do_layer_norm = check_flag(do_layer_norm, "do_layer_norm")
        self.top_layer_only = check_flag(top_layer_only, "top_layer_only")
        self.scalar_mix_weights = None
        if scalar_mix_weights is not None:
            # Checked here under its own name (the mixes call it
            # `initial_scalar_weights`): one weight per biLM layer.
            self.scalar_mix_weights = check_numbers(
                scalar_mix_weights,
                "scalar_mix_weights",
                count=bilm.num_layers + 1,
                one_per="biLM layer (token layer included)",
            )
        self.fine_tune = check_flag(fine_tune, "fine_tune")
        self.layer_norm_rule = layer_norm_rule
        self.bilm.trainable = self.fine_tune
        self.vocabulary, self.word_lookup = _word_lookup(bilm, vocabulary)
        self.scalar_mixes = [
            ScalarMix(
                initial_scalar_weights=self.scalar_mix_weights,
                l2_coef=l2_coef,
                do_layer_norm=do_layer_norm,
                top_layer_only=top_layer_only,
                layer_norm_rule=layer_norm_rule,
                trainable=self.scalar_mix_weights is None,
                dtype=self.dtype_policy,
                name=f"scalar_mix_{i}",
            )
            for i in range(self.num_output_representations)
        ]
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="output_dropout"
        )

    def build(self, input_shape):
        if not self.bilm.built:
            self.bilm.build()
        layer = (None, None, 2 * self.bilm.projection_dim)
        for mix in self.scalar_mixes:
            mix.build([layer] * (self.bilm.num_layers + 1))
        self.dropout_layer.build(layer)

    def __call__(self, inputs, *args, **kwargs):
        refuse_keras_export(self)
        if backends.takes_host_tokens(inputs):
            inputs = host_inputs(
                self.bilm.encoder, inputs, self._host_vocabulary()
            )
        check_batch_structure(inputs, "ELMoEmbedding")
        return super().__call__(inputs, *args, **kwargs)

    def _host_vocabulary(self):
        if self.vocabulary is None:
            return None
        cached = getattr(self, "_vocabulary_object", None)
        if cached is None:
            cached = check_vocabulary(self.vocabulary, self.bilm.encoder)
            self._vocabulary_object = cached
        return cached

    def _bilm_inputs(self, inputs):
        shape = tuple(inputs.shape)
        encoder = self.bilm.encoder
        if _is_string(inputs):
            if len(shape) != 2:
                raise KerasElmoError(
                    "ELMoEmbedding expects string tokens of shape (batch, "
                    "time) padded with ''. Split sentences into tokens first "
                    "(e.g. tf.strings.split).",
                    "inputs",
                    received=tensor("string", shape),
                )
            if encoder.needs_vocabulary and self.word_lookup is None:
                raise KerasElmoError(
                    "This biLM reads word ids (token_encoder="
                    f"{self.bilm.token_encoder!r}); to take string tokens, "
                    "ELMoEmbedding needs its vocabulary: "
                    "ELMoEmbedding(bilm, vocabulary='vocab.txt')."
                )
            return encoder.tokens_to_inputs(inputs, self.word_lookup)
        if len(shape) == 2 and encoder.input_shape:
            raise KerasElmoError(
                "ELMoEmbedding expects tf.string tokens (batch, time) or "
                "integer character ids (batch, time, 50) as `inputs`.",
                "inputs",
                received=tensor(inputs.dtype, shape),
            )
        return encoder.check(inputs)

    def call(self, inputs, training=None):
        ids = self._bilm_inputs(inputs)
        # AllenNLP's rule mixes with the <S>/</S> positions; the mixes drop
        # them afterwards.
        outputs = self.bilm(
            ids,
            training=training if self.fine_tune else False,
            keep_boundaries=self.layer_norm_rule == "allennlp",
        )
        mixed = []
        for mix in self.scalar_mixes:
            x = mix(outputs["layer_outputs"], mask=outputs["mask"])
            mixed.append(self.dropout_layer(x, training=training))
        return mixed[0] if len(mixed) == 1 else mixed

    def compute_mask(self, inputs, mask=None):
        if _is_string(inputs):
            token_mask = ops.not_equal(inputs, "")
        else:
            token_mask = self.bilm.encoder.mask(inputs)
        if self.num_output_representations == 1:
            return token_mask
        return [token_mask] * self.num_output_representations

    def compute_output_shape(self, input_shape):
        shape = (*input_shape[:2], 2 * self.bilm.projection_dim)
        if self.num_output_representations == 1:
            return shape
        return [shape] * self.num_output_representations

    @classmethod
    def from_config(cls, config):
        # A saved config holds its biLM (get_config serializes it) and
        # its vocabulary's tokens: one that names a source or a file
        # instead would make loading a model file download or read
        # other files.
        named = {
            key: config.get(key)
            for key in ("bilm", "vocabulary")
            if isinstance(config.get(key), str)
        }
        if named:
            key, value = next(iter(named.items()))
            raise KerasElmoError(
                f"This ELMoEmbedding config names its `{key}` instead of "
                "holding it; loading a saved model reads only the model file "
                "(no download, no other file). Build ELMoEmbedding(source) "
                "in code instead.",
                received=value,
            )
        return super().from_config(config)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "bilm": keras.saving.serialize_keras_object(self.bilm),
                "num_output_representations": (self.num_output_representations),
                "dropout": self.dropout,
                "l2_coef": self.l2_coef,
                "do_layer_norm": self.do_layer_norm,
                "top_layer_only": self.top_layer_only,
                "scalar_mix_weights": self.scalar_mix_weights,
                "fine_tune": self.fine_tune,
                "layer_norm_rule": self.layer_norm_rule,
            }
        )
        if self.vocabulary is not None:
            config["vocabulary"] = self.vocabulary
        return config

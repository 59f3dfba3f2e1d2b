"""The SavedModel export: `export_savedmodel` writes the module of
`elmo_serving` (raw text in, the outputs of TF Hub's ELMo module out) for
any biLM source, what `keras-elmo export-savedmodel` runs; `keras_layer`
loads one back as a Keras layer."""

import os
import warnings

import keras
import tensorflow as tf

from elmo_core.errors import KerasElmoError
from elmo_core.errors import OutputPathError
from elmo_core.errors import check_flag
from elmo_core.errors import check_strings
from elmo_core.errors.backends import require_tensorflow
from elmo_core.errors.blame import about
from elmo_core.files import atomic_output
from elmo_core.files import check_output_directory
from elmo_core.formats.savedmodel_limits import DEFAULT_MAX_BATCH_TOKENS
from elmo_core.ids.vocabulary import Vocabulary
from keras_elmo.export.elmo_serving import ELMoServing
from keras_elmo.export.elmo_serving import check_max_batch_tokens
from keras_elmo.export.model_source import MODEL_KINDS
from keras_elmo.export.model_source import exported_model


def export_savedmodel(
    model,
    output,
    *,
    weights=None,
    vocabulary=None,
    cache_vocab=None,
    max_batch_tokens=DEFAULT_MAX_BATCH_TOKENS,
):
    """Writes a SavedModel that embeds raw text: signatures `default`
    (sentences), `tokens` and, with a vocabulary, `token_ids`, returning
    `word_emb`, `lstm_outputs1..L`, `elmo`, `default` and `sequence_len`
    (the names of TF Hub's ELMo module; see `ELMoServing`). It runs
    without keras_elmo installed. What `keras-elmo export-savedmodel`
    runs.

    Args:
        model: a biLM source, as `keras_elmo.load_bilm` takes it (a
            pretrained model name, a URL, a training run or export
            directory, an ELMoForManyLangs folder, a `.keras` file holding
            a biLM, or an official options.json with `weights`), or a
            `keras_elmo.layers.BiLM`.
        output: str. The directory to write (new or empty).
        weights: str or None. The hdf5 weights of an options.json given
            as `model`. Defaults to `None`.
        vocabulary: a word-input biLM's vocabulary (a path, a list of
            tokens or an `elmo_core.ids.Vocabulary`), which the SavedModel
            carries: tokens it lacks read as `<UNK>`. Defaults to the one
            the source holds (a run's, or vocab.txt beside options.json).
            A biLM that reads characters takes none (given with a `BiLM`
            object, it is read as `cache_vocab`, its former meaning, with
            a `DeprecationWarning`).
        cache_vocab: a biLM that reads characters: tokens whose embeddings
            are computed once and stored (a file of one token a line, or a
            list of str); they then skip the char CNN, other tokens use
            characters, and the signature `token_ids` takes rows of it.
            Defaults to `None`.
        max_batch_tokens: int. The largest request served, in token
            positions (batch x max_len); a larger one is refused. Defaults
            to `DEFAULT_MAX_BATCH_TOKENS`.

    Returns:
        `output`.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "elmo_savedmodel")
    >>> _ = keras_elmo.export.export_savedmodel(
    ...     "tests/fixtures/bilm-tf/model", path)
    >>> elmo = tf.saved_model.load(path)  # TensorFlow only
    >>> default = elmo.signatures["default"]
    >>> default(sentences=tf.constant(["The cat sat ."]))["elmo"].shape
    TensorShape([1, 4, 32])
    """
    require_tensorflow("The SavedModel export", keras.backend.backend())
    max_batch_tokens = check_max_batch_tokens(max_batch_tokens)
    named = [v for v in (vocabulary, cache_vocab) if _is_path(v)]
    check_output_directory(output, named, "output")
    bilm, source = exported_model(
        model, weights, output, check_output_directory, whole=False
    )
    _check_bilm(bilm)
    served = _served_vocabulary(bilm, source, vocabulary, cache_vocab)
    if os.path.isdir(output) and os.listdir(output):
        raise OutputPathError(
            "`output` exists and is not empty; choose a new directory for "
            "the SavedModel.",
            "output",
            received=output,
        )
    module = ELMoServing(bilm, served, max_batch_tokens)
    module.trace()
    with atomic_output(output, directory=True) as temporary:
        tf.saved_model.save(module, temporary, signatures=module.signatures())
    return output


def _is_path(value):
    return isinstance(value, (str, os.PathLike))


def _check_bilm(bilm):
    from keras_elmo.layers.bilm import BiLM

    if not isinstance(bilm, BiLM):
        raise KerasElmoError(
            f"`model` must be {MODEL_KINDS}, or a keras_elmo.layers.BiLM.",
            "model",
            received=bilm,
        )


def _served_vocabulary(bilm, source, vocabulary, cache_vocab):
    """The vocabulary the SavedModel serves ids of (`ELMoServing`'s): a
    word-input biLM's own (`vocabulary`, else its `source`'s), or the
    tokens cached for a biLM that reads characters (`cache_vocab`), or
    None."""
    if bilm.encoder.needs_vocabulary:
        if cache_vocab is not None:
            raise KerasElmoError(
                "`cache_vocab` is for biLMs that read characters; a "
                "word-input biLM serves its own vocabulary (its table is "
                "the cache). Drop it.",
                "cache_vocab",
            )
        if vocabulary is None and source is not None:
            vocabulary = source.read().vocabulary
            if vocabulary is None:
                raise KerasElmoError(
                    f"{source.description} is a word-input biLM and no "
                    "vocabulary was found for it (no vocab.txt beside its "
                    "options.json); give the one it was trained with as "
                    "`vocabulary`.",
                    "vocabulary",
                )
        return vocabulary  # checked against the biLM's table
    if vocabulary is not None:
        cache_vocab = _former_vocabulary(bilm, source, vocabulary, cache_vocab)
    if _is_path(cache_vocab):
        with about("cache_vocab"):
            return Vocabulary.from_file(cache_vocab).tokens
    if cache_vocab is not None:
        return check_strings(cache_vocab, "cache_vocab")
    return None


def _former_vocabulary(bilm, source, vocabulary, cache_vocab):
    """`cache_vocab`, for a `vocabulary` given with a biLM that reads
    characters: refused for a source (as `load_bilm` refuses it); with a
    `BiLM` object, its former meaning, the tokens to cache."""
    if source is not None or cache_vocab is not None:
        where = source.description if source is not None else "the biLM"
        raise KerasElmoError(
            f"`vocabulary` is for word-input biLMs; {where} reads "
            f"{bilm.token_encoder} and takes any token. Drop it (tokens "
            "whose embeddings the SavedModel stores are `cache_vocab`).",
            "vocabulary",
        )
    warnings.warn(
        "export_savedmodel(vocabulary=...) with a biLM that reads "
        "characters: pass the tokens to cache as cache_vocab=...; "
        "vocabulary= is a word-input biLM's own vocabulary.",
        DeprecationWarning,
        stacklevel=4,
    )
    return vocabulary


def keras_layer(path, trainable=True):
    """The exported model as a Keras 3 layer (`SavedModelLayer`) that takes
    untokenised sentences (or a dict of `tokens` and `sequence_len`) and
    returns the output dict; with `trainable=True` the scalar mix trains
    with the task, with any optimizer.

    Example (`savedmodel_folder` is a biLM exported by `keras-elmo
    export-savedmodel`, as `export_savedmodel`'s example makes one; here
    the test fixture biLM):

    >>> layer = keras_elmo.export.keras_layer(savedmodel_folder)
    >>> layer(tf.constant(["Hello world"]))["default"].shape
    TensorShape([1, 32])
    >>> len(layer.trainable_weights)  # the mix and gamma
    2
    """
    from elmo_core.files.paths import check_input_directory
    from keras_elmo.layers.saved_model_layer import SavedModelLayer

    check_flag(trainable, "trainable")
    path = check_input_directory(
        path,
        "`path`",
        "a SavedModel directory written by export_savedmodel",
        argument="path",
    )
    try:
        return SavedModelLayer(path, trainable=trainable)
    except KerasElmoError as error:
        error.argument = "path"  # the layer's `directory` is this `path`
        raise

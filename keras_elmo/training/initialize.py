"""Starting a new run from the weights of another biLM."""

from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from keras_elmo.layers.bilm_weights import copy_bilm_weights


def initialize(model, vocabulary, source):
    """Copies the biLM weights of `source` (and, with the same vocabulary,
    its softmax) into `model`; returns what was copied, in words.

    Args:
        model: a built `keras_elmo.models.ELMoLanguageModel`.
        vocabulary: a `elmo_core.ids.Vocabulary`, the run's.
        source: a `keras_elmo.sources.BiLMData`: the `bilm`, `softmax`
            (or None), `vocabulary` (or None) and `description` of the
            weights to start from.
    """
    _check_token_encoder(model, source)
    _check_table_rows(vocabulary, source)
    _copy_bilm(model, source.bilm)
    same_vocabulary = (
        source.vocabulary is not None
        and source.vocabulary.tokens == vocabulary.tokens
    )
    if source.softmax is not None and same_vocabulary:
        model.softmax_kernel.assign(source.softmax[0])
        model.softmax_bias.assign(source.softmax[1])
        return "biLM and softmax"
    return "biLM (softmax started fresh: the vocabulary differs)"


def _check_token_encoder(model, source):
    theirs, ours = source.bilm.token_encoder, model.bilm.token_encoder
    if theirs != ours:
        raise KerasElmoError(
            f"`init_from` ({source.description}) is a biLM that reads "
            f"{theirs} (token_encoder={theirs!r}), but this run trains one "
            f"that reads {ours}: their "
            "token encoders cannot share weights. Leave `token_encoder` "
            "out (the run then takes the source's), or start from a biLM "
            "of the same kind.",
            "init_from",
        )


def _check_table_rows(vocabulary, source):
    # A word table has one row per line of its own vocabulary.
    if source.bilm.encoder.needs_vocabulary and (
        source.vocabulary is None
        or source.vocabulary.tokens != vocabulary.tokens
    ):
        raise KerasElmoError(
            f"{source.description} is a word-input biLM, whose table rows "
            "belong to the lines of its vocabulary: `init_from` needs "
            "the same vocabulary (give its vocab.txt as `vocabulary`; it "
            "must lie beside the source's options.json or in its run).",
            "init_from",
        )


def _copy_bilm(model, bilm):
    misfit = copy_bilm_weights(model.bilm, bilm)
    if misfit is not None:
        raise WeightFileError(
            f"`init_from` weights do not fit the model: {misfit} in the "
            "model of this run's size. Give the size of the source (or no "
            "size at all, to take its size).",
            "init_from",
        )

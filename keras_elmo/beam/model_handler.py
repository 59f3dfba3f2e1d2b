"""`ELMoModelHandler`: a biLM for Apache Beam's `RunInference`."""

from apache_beam.ml.inference.base import ModelHandler
from apache_beam.ml.inference.base import PredictionResult

from elmo_core.embedding_files.hdf5_layout import BATCHES_PER_CHUNK


def _num_tokens(sentence):
    return len(sentence)


def _num_tokens_keyed(element):
    return len(element[1])


class ELMoModelHandler(ModelHandler):
    """Runs a `keras_elmo.corpus.SentenceEmbedder` in `RunInference`.

    Beam's TensorFlow handlers do not fit a biLM: they load with
    `tf.keras.models.load_model` and stack each batch into one tensor,
    while sentences differ in length. This handler batches by tokens:
    Beam's `BatchElements` weighs each sentence by its token count and
    sizes batches between one and `BATCHES_PER_CHUNK` token budgets, and
    the embedder cuts each Beam batch into length-sorted biLM calls under
    its `max_batch_tokens`.
    The biLM is loaded once per worker process and shared by its threads
    (Beam's `Shared`); `large_model=True` (passed through) shares one copy
    across a machine's processes where the runner allows.

    Examples are token lists (or lines: str or UTF-8 bytes, which must not
    be bad lines: `EmbedSentences` sorts those out first); each prediction
    is a `PredictionResult(example, array)`.

    Args:
        embedder: a `keras_elmo.corpus.SentenceEmbedder`.
        keyed: bool. The handler sits inside a `KeyedModelHandler`, so
            `BatchElements` sees `(key, sentence)` pairs. Defaults to
            `False`.
        **kwargs: Beam `ModelHandler` arguments (`min_batch_size`,
            `max_batch_size`, `large_model`, `model_copies`, ...).

    In a pipeline: `keyed_tokens | RunInference(KeyedModelHandler(
    ELMoModelHandler(embedder, keyed=True)))`, as `EmbedSentences` does.

    Example (the handler alone, as a runner calls it):

    >>> embedder = keras_elmo.corpus.SentenceEmbedder(
    ...     "tests/fixtures/bilm-tf/model", output_layers="top")
    >>> handler = keras_elmo.beam.ELMoModelHandler(embedder)
    >>> model = handler.load_model()
    >>> results = handler.run_inference([["The", "cat"], ["Hello"]], model)
    >>> [result.inference.shape for result in results]
    [(2, 32), (1, 32)]
    """

    def __init__(self, embedder, keyed=False, **kwargs):
        from elmo_core.errors import check_flag
        from elmo_core.errors import check_instance
        from keras_elmo.corpus.sentence_embedder import SentenceEmbedder

        check_instance(
            embedder,
            SentenceEmbedder,
            "embedder",
            expected="a keras_elmo.corpus.SentenceEmbedder",
        )
        keyed = check_flag(keyed, "keyed")
        # With element_size_fn, Beam's batch sizes count tokens (2.77
        # documents max_batch_weight, but BatchElements does not take it).
        kwargs.setdefault("min_batch_size", embedder.max_batch_tokens)
        kwargs.setdefault(
            "max_batch_size", BATCHES_PER_CHUNK * embedder.max_batch_tokens
        )
        kwargs.setdefault(
            "element_size_fn", _num_tokens_keyed if keyed else _num_tokens
        )
        super().__init__(**kwargs)
        self.embedder = embedder

    def load_model(self):
        return self.embedder.load()

    def run_inference(self, batch, model, inference_args=None):
        token_lists = [self.embedder.tokens(sentence) for sentence in batch]
        arrays = self.embedder.embed_tokens(token_lists, model)
        return [PredictionResult(x, y) for x, y in zip(batch, arrays)]

    def get_num_bytes(self, batch):
        return sum(len(token) for sentence in batch for token in sentence)

    def get_metrics_namespace(self):
        return "keras_elmo"

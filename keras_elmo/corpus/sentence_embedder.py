"""`SentenceEmbedder`: the engine-neutral piece of corpus embedding."""

import os
import pickle
import threading

import numpy as np

from elmo_core.embedding_files.hdf5_layout import DEFAULT_OUTPUT_LAYERS
from elmo_core.embedding_files.hdf5_layout import OUTPUT_LAYERS
from elmo_core.embedding_files.hdf5_layout import protein_vector
from elmo_core.embedding_files.hdf5_layout import select_layers
from elmo_core.embedding_files.inputs import PER_PROTEIN
from elmo_core.embedding_files.inputs import PER_RESIDUE
from elmo_core.embedding_files.inputs import PROTEIN_VECTORS
from elmo_core.embedding_files.sentences import DEFAULT_DTYPE
from elmo_core.embedding_files.sentences import DEFAULT_MAX_SENTENCE_TOKENS
from elmo_core.embedding_files.sentences import DTYPES
from elmo_core.embedding_files.sentences import BadLine
from elmo_core.embedding_files.sentences import to_tokens
from elmo_core.embedding_files.token_batches import DEFAULT_MAX_BATCH_TOKENS
from elmo_core.embedding_files.token_batches import token_batches
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.errors import check_numbers
from elmo_core.files.paths import identity
from elmo_core.text.tokenizers import DEFAULT_LANGUAGE
from elmo_core.text.tokenizers import DEFAULT_TOKENIZATION
from elmo_core.text.tokenizers import shared_tokenizer
from keras_elmo.sources.bilm_source import real_files

# What each sentence's array holds: the layers `keras-elmo embed` writes,
# or a fixed scalar mix of them.
MIX = "mix"
EMBEDDER_OUTPUTS = (*OUTPUT_LAYERS, MIX)

# The biLMs this process has loaded: one per source, shared by every
# embedder (and thread) of the process, each with the identity of every
# file it was read from (`paths.identity`): a biLM whose files changed on
# disk since is loaded again, never served from the old load.
_LOADED = {}
_LOADING = threading.Lock()
# What `__call__` takes as one sentence, which is not a list of them.
_ONE_SENTENCE = (str, bytes, bytearray, memoryview)


class SentenceEmbedder:
    """Embeds batches of sentences with a biLM loaded once per process.

    The piece a distributed engine runs (Apache Beam's `RunInference`
    through `keras_elmo.beam.ELMoModelHandler`, a Ray Data `map_batches`
    actor, a Spark UDF): it holds only what names the biLM and the output,
    so it pickles small, and loads the biLM on first use in each worker
    process (later embedders of the same source in that process share it).
    Stateless: each sentence starts from a zero LSTM state, so its
    embedding does not depend on the batch; it equals `keras-elmo embed`'s
    dataset for the same line.

    Args:
        source: str or path. Any biLM source `keras_elmo.load_bilm`
            accepts (a pretrained name, a URL, an export or run directory,
            `OPTIONS.json,WEIGHTS.hdf5`, ...).
        weights: str or None. The hdf5 weights, with an options file as
            `source`. Defaults to `None`.
        vocabulary: the vocabulary of a word-input biLM (path or list);
            default: the source's own. Unused for character biLMs.
        output_layers: `"all"` (`(num_layers + 1, n, 2 * projection_dim)`),
            `"top"` or `"average"` (`(n, 2 * projection_dim)`), as `keras-elmo
            embed --all/--top/--average`; or `"mix"`: `gamma * sum_k
            softmax(scalar_weights)_k * layer_k` (`ScalarMix` without layer
            norm). Defaults to `"all"`.
        scalar_weights: list of `num_layers + 1` numbers, for `"mix"`.
        gamma: float or None. The mix's scale, for `"mix"` only.
            Defaults to `1.0` (None).
        dtype: `"float32"` or `"float16"` (half the storage; the biLM runs
            in float32 either way). Defaults to `"float32"`.
        max_batch_tokens: int. Padded token positions per biLM call (a
            longer sentence is embedded alone). Defaults to `16384`, as `embed`.
        max_sentence_tokens: int. A longer sentence is a bad line
            (`elmo_core.embedding_files.sentences.BadLine`). Defaults to `2048`.
        protein_vectors: `None` (sentences: one array each), or, for
            proteins (one residue a token, e.g. FASTA input of
            `keras_elmo.beam.embed_corpus`), `"both"`, `"per-residue"`
            or `"per-protein"`: each result is then a dict of
            `"per_residue"` (the array above) and / or `"per_protein"`
            (`(2 * projection_dim,)`: SeqVec's sum over the layers, then
            the mean over residues, for `"all"`; the mean over residues of
            the layer or mix chosen otherwise), computed in float32.
            Defaults to `None`.
        tokenize: how a line (str or bytes) is split into tokens:
            `"whitespace"` (default: as written), `"spacy"` or `"moses"`
            (raw sentences, `elmo_core.text.tokenizer`; the `prepare`
            extra). A token list is taken as it is.
        language: str. The language code of `tokenize`'s rules. Defaults
            to `"en"`.

    Call arguments:
        sentences: a list (or any sequence: a tuple, a 1-D NumPy or pandas
            array) of lines (str or UTF-8 bytes, split on whitespace) or of
            token lists (a 2-D NumPy array is a list of token lists, its
            rows, which must not be padded: an empty token is an error).
            One line alone (a str, not in a list) is refused, as is None:
            wrap one sentence in a list.

    Returns:
        A list of NumPy arrays, one per sentence, in order.

    Example:

    >>> embedder = keras_elmo.corpus.SentenceEmbedder(
    ...     "tests/fixtures/bilm-tf/model", output_layers="top")
    >>> [x.shape for x in embedder(["The cat sat .", b"Hello"])]
    [(4, 32), (1, 32)]
    """

    def __init__(
        self,
        source,
        weights=None,
        vocabulary=None,
        output_layers=DEFAULT_OUTPUT_LAYERS,
        scalar_weights=None,
        gamma=None,
        dtype=DEFAULT_DTYPE,
        max_batch_tokens=DEFAULT_MAX_BATCH_TOKENS,
        max_sentence_tokens=DEFAULT_MAX_SENTENCE_TOKENS,
        protein_vectors=None,
        tokenize=DEFAULT_TOKENIZATION,
        language=DEFAULT_LANGUAGE,
    ):
        self.source = _check_path(source, "source")
        self.weights = (
            None if weights is None else _check_path(weights, "weights")
        )
        self.vocabulary = vocabulary
        self.output_layers = check_choice(
            output_layers, "output_layers", choices=EMBEDDER_OUTPUTS
        )
        self.scalar_weights = _check_mix(output_layers, scalar_weights)
        self.gamma = _check_gamma(output_layers, gamma)
        self.dtype = check_choice(dtype, "dtype", choices=DTYPES)
        self.max_batch_tokens = check_integer(
            max_batch_tokens, "max_batch_tokens", minimum=1
        )
        self.max_sentence_tokens = check_integer(
            max_sentence_tokens, "max_sentence_tokens", minimum=1
        )
        self.protein_vectors = (
            None
            if protein_vectors is None
            else check_choice(
                protein_vectors,
                "protein_vectors",
                choices=tuple(PROTEIN_VECTORS),
            )
        )

        # Checked (and the library found) here; each process makes its own.
        shared_tokenizer(tokenize, language)
        if self.protein_vectors is not None and tokenize != "whitespace":
            raise KerasElmoError(
                "Proteins are one residue a token; `tokenize` is for "
                "sentences of text. Leave it out with `protein_vectors`.",
                "tokenize",
                received=tokenize,
            )
        self.tokenize, self.language = tokenize, language

    # === Sentences ===

    def tokens(self, sentence):
        """The tokens of one sentence (`elmo_core.embedding_files.sentences.
        to_tokens`, a line split by `tokenize`); raises `BadLine` for an
        empty, too long or non-UTF-8 one."""
        split = shared_tokenizer(self.tokenize, self.language).tokenize
        return to_tokens(sentence, self.max_sentence_tokens, split)

    def __call__(self, sentences):
        token_lists = []
        for i, sentence in enumerate(_sentences(sentences)):
            try:
                token_lists.append(self.tokens(sentence))
            except BadLine as error:
                raise BadLine(error.reason, f"Sentence {i}: {error}") from None
            except KerasElmoError as error:
                raise KerasElmoError(
                    f"Sentence {i}: {error}", "sentences"
                ) from None
        return self.embed_tokens(token_lists)

    def embed_tokens(self, token_lists, model=None):
        """The arrays of checked token lists (see `tokens`), in order;
        `model` is this process's `load()` (or an engine's proxy of it)."""
        model = model or self.load()
        results = [None] * len(token_lists)
        lengths = [len(tokens) for tokens in token_lists]
        for batch in token_batches(lengths, self.max_batch_tokens):
            values = model([token_lists[i] for i in batch])
            for row, i in enumerate(batch):
                results[i] = self._select(values[row, :, : lengths[i]])
        return results

    def _select(self, layers):
        if self.output_layers == MIX:
            weights = np.exp(self.scalar_weights - np.max(self.scalar_weights))
            weights = (self.gamma * weights / weights.sum()).astype("float32")
            mixed = np.tensordot(weights, layers, axes=1)
        else:
            mixed = select_layers(layers, self.output_layers)
        if self.protein_vectors is None:
            return mixed.astype(self.dtype, copy=False)
        vectors = {
            PER_RESIDUE: mixed,
            PER_PROTEIN: protein_vector(
                layers if self.output_layers == "all" else mixed,
                self.output_layers,
            ),
        }
        return {
            name: vectors[name].astype(self.dtype, copy=False)
            for name in PROTEIN_VECTORS[self.protein_vectors]
        }

    # === The biLM, once per process ===

    def load(self):
        """The biLM of this process (loaded on first use), as a callable:
        token lists -> float32 `(batch, num_layers + 1, time,
        2 * projection_dim)`."""
        key = pickle.dumps((self.source, self.weights, self.vocabulary))
        model = _current(_LOADED.get(key))
        if model is None:
            with _LOADING:
                model = _current(_LOADED.get(key))
                if model is None:
                    model = _LOADED[key] = _LoadedBiLM(self)
        mix = self.scalar_weights
        if mix is not None and len(mix) != model.num_layers + 1:
            raise KerasElmoError(
                f"`scalar_weights` must be {model.num_layers + 1} numbers: "
                f"{model.description} has {model.num_layers + 1} layers to "
                "mix (num_layers + 1).",
                "scalar_weights",
                received=self.scalar_weights.tolist(),
            )
        return model

    def __repr__(self):
        return (
            f"SentenceEmbedder({self.source!r}, output_layers="
            f"{self.output_layers!r}, dtype={self.dtype!r})"
        )


def _current(model):
    """`model` if the files it was read from are unchanged, else None."""
    if model is not None and identity(model.inputs) == model.identity:
        return model
    return None


def _check_path(value, argument):
    if isinstance(value, (str, os.PathLike)) and os.fspath(value):
        return value
    raise KerasElmoError(
        f"`{argument}` must be a biLM source: a path, a pretrained model "
        "name or a URL (str).",
        argument,
        received=value,
    )


def _sentences(sentences):
    """`sentences` as an iterable of sentences, or an error saying what
    to pass (one sentence alone, None, a mapping, a scalar)."""
    if isinstance(sentences, _ONE_SENTENCE):
        raise KerasElmoError(
            "`sentences` is one sentence; pass a list of sentences, e.g. "
            "embedder([line]) (each line or token list gives one array).",
            "sentences",
            received=sentences,
        )
    if (
        isinstance(sentences, dict)
        or not hasattr(sentences, "__iter__")
        or (isinstance(sentences, np.ndarray) and sentences.ndim == 0)
    ):
        raise KerasElmoError(
            "`sentences` must be a list of lines (str or UTF-8 bytes) or of "
            "token lists.",
            "sentences",
            received=sentences,
        )
    return sentences


def _check_gamma(output_layers, gamma):
    """The mix's scale: `gamma` (1.0 for None), for `"mix"` only."""
    if gamma is None:
        return 1.0
    if output_layers != MIX:
        raise KerasElmoError(
            "`gamma` scales the mix of `scalar_weights`; give them too, or "
            "leave `gamma` out.",
            "gamma",
            received=gamma,
        )
    return check_number(gamma, "gamma")


def _check_mix(output_layers, scalar_weights):
    if output_layers != MIX:
        if scalar_weights is not None:
            raise KerasElmoError(
                "`scalar_weights` are for `output_layers` 'mix'; drop one of "
                "them.",
                "output_layers",
                received=output_layers,
            )
        return None
    if scalar_weights is None:
        raise KerasElmoError(
            "`output_layers` 'mix' needs `scalar_weights`: one number per "
            "biLM layer (num_layers + 1, e.g. [0.0, 0.0, 0.0]).",
            "output_layers",
            received=output_layers,
        )
    return np.asarray(check_numbers(scalar_weights, "scalar_weights"))


class _LoadedBiLM:
    """A checked, compiled biLM: token lists -> its layers, float32."""

    def __init__(self, embedder):
        from keras_elmo.corpus.bilm_dump import compiled_layers
        from keras_elmo.layers.token_encoders.word_encoder import (
            check_vocabulary,
        )
        from keras_elmo.loading import classify

        source = classify(embedder.source, embedder.weights, progress=False)
        # Every file it reads, and their identities now (before reading,
        # so that a file replaced while it is read is read again later).
        self.inputs = source.inputs()
        if isinstance(embedder.vocabulary, (str, os.PathLike)):
            self.inputs += real_files(embedder.vocabulary)
        self.identity = identity(self.inputs)
        data = source.read()
        self.bilm = data.bilm
        self.description = source.description
        self.num_layers = self.bilm.num_layers
        self.vocabulary = None
        if self.bilm.encoder.needs_vocabulary:
            self.vocabulary = check_vocabulary(
                embedder.vocabulary or data.vocabulary, self.bilm.encoder
            )
        self.layers = compiled_layers(self.bilm)

    def __call__(self, token_lists):
        ids = self.bilm.encoder.batch_to_inputs(token_lists, self.vocabulary)
        return np.asarray(self.layers(ids))

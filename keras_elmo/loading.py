"""Where a biLM comes from: a run, an export, or official files.

`open_source` turns what a user passes (`--model`, `--options`/`--weights`,
`--init-from`) into a `BiLMSource`, which reads its files once and knows
the biLM's size, the biLM itself and, where the source has them, the
softmax and vocabulary of its language model.
"""

import os

from keras_elmo import pretrained
from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import WeightFileError
from keras_elmo.formats.bilm_tf import load_bilm
from keras_elmo.formats.elmo_for_many_langs import (
    is_model_dir as is_elmo_for_many_langs_dir,
)
from keras_elmo.training.run_directory import EXPORT_OPTIONS
from keras_elmo.training.run_directory import EXPORT_SOFTMAX
from keras_elmo.training.run_directory import EXPORT_WEIGHTS
from keras_elmo.training.run_directory import VOCAB_FILE
from keras_elmo.training.run_directory import RunDirectory
from keras_elmo.training.run_directory import read_softmax
from keras_elmo.training.sizes import size_of


class BiLMSource:
    """The weights of a biLM on disk, read at most once.

    Build it with `open_source`. `bilm()` loads the biLM, `bilm_size()`
    gives its size as `BiLM` arguments, and `initialize(model, vocabulary)`
    copies its weights into an `ELMoLanguageModel` (the softmax too when
    the source has one for the same vocabulary).
    """

    def __init__(self, description, options=None, weights=None, run=None):
        self.description = description
        self.options = options
        self.weights = weights
        self.run = run
        self._loaded = None

    def _load(self):
        """`(bilm, softmax, vocabulary)`; softmax and vocabulary may be
        None. Read once."""
        if self._loaded is not None:
            return self._loaded
        if self.run is not None:
            model, vocabulary, _ = RunDirectory(self.run).load()
            softmax = (model.softmax_kernel.numpy(), model.softmax_bias.numpy())
            self._loaded = (model.bilm, softmax, vocabulary)
            return self._loaded
        bilm = load_bilm(self.options, self.weights)
        softmax = vocabulary = None
        if self.weights is None:
            # An ELMoForManyLangs model folder: a biLM without a softmax.
            self._loaded = (bilm, None, None)
            return self._loaded
        directory = os.path.dirname(self.options)
        softmax_file = os.path.join(directory, EXPORT_SOFTMAX)
        vocab_file = os.path.join(directory, VOCAB_FILE)
        if os.path.isfile(softmax_file) and os.path.isfile(vocab_file):
            softmax = read_softmax(softmax_file)
            vocabulary = Vocabulary.from_file(vocab_file)
        elif bilm.encoder.needs_vocabulary and os.path.isfile(vocab_file):
            vocabulary = Vocabulary.from_file(vocab_file)
        self._loaded = (bilm, softmax, vocabulary)
        return self._loaded

    def bilm(self):
        """The source's `BiLM` (stateless, as loaded)."""
        return self._load()[0]

    def vocabulary(self):
        """The source's vocabulary (a run's, or the `vocab.txt` beside an
        export's options), or None."""
        return self._load()[2]

    def bilm_size(self):
        """The biLM's size, as the `BiLM` arguments of `BILM_KEYS`."""
        if self.run is not None:
            return dict(RunDirectory(self.run).read_config().bilm)
        return size_of(self.bilm().get_config())

    def initialize(self, model, vocabulary):
        """Copies the biLM weights (and, with the same vocabulary, the
        softmax) into `model`; returns what was copied, in words."""
        bilm, softmax, source_vocabulary = self._load()
        theirs, ours = bilm.token_encoder, model.bilm.token_encoder
        if theirs != ours:
            raise KerasElmoError(
                f"--init-from {self.description} is a biLM that reads "
                f"{theirs} (token_encoder={theirs!r}), but this run trains "
                f"one that reads {ours}: their token encoders cannot share "
                "weights. Drop --token-encoder (the run then takes the "
                "source's), or start from a biLM of the same kind."
            )
        if bilm.encoder.needs_vocabulary and (
            source_vocabulary is None
            or source_vocabulary.tokens != vocabulary.tokens
        ):
            # Its table has one row per line of its own vocabulary.
            raise KerasElmoError(
                f"{self.description} is a word-input biLM, whose table rows "
                "belong to the lines of its vocabulary: --init-from needs "
                "the same vocabulary (pass its vocab.txt with --vocab; it "
                "must lie beside the source's options.json or in its run)."
            )
        ours = [w for w in model.bilm.weights if w.trainable]
        theirs = [w for w in bilm.weights if w.trainable]
        for mine, other in zip(ours, theirs):
            if tuple(mine.shape) != tuple(other.shape):
                name = other.path.split("/", 1)[-1]
                raise WeightFileError(
                    f"--init-from weights do not fit the model: {name} has "
                    f"shape {tuple(other.shape)} there but "
                    f"{tuple(mine.shape)} in the model the flags describe. "
                    "Give the flags of the source (or no size flags, to "
                    "take its size)."
                )
            mine.assign(other.numpy())
        same_vocabulary = (
            source_vocabulary is not None
            and source_vocabulary.tokens == vocabulary.tokens
        )
        if softmax is not None and same_vocabulary:
            model.softmax_kernel.assign(softmax[0])
            model.softmax_bias.assign(softmax[1])
            return "biLM and softmax"
        return "biLM (softmax started fresh: the vocabulary differs)"


def _from_directory(path, flag):
    # Before the run check: both folders have a config.json.
    if is_elmo_for_many_langs_dir(path):
        return BiLMSource(f"the ELMoForManyLangs model in {path}", path)
    if RunDirectory(path).is_run():
        return BiLMSource(f"the run in {path}", run=path)
    options = os.path.join(path, EXPORT_OPTIONS)
    weights = os.path.join(path, EXPORT_WEIGHTS)
    if os.path.isfile(options) and os.path.isfile(weights):
        return BiLMSource(f"the export in {path}", options, weights)
    raise KerasElmoError(
        f"{flag} {path}: expected a training run directory (with "
        "config.json) or a directory holding options.json and weights.hdf5 "
        "(an export); found neither."
    )


def open_source(model=None, options=None, weights=None, flag="--model"):
    """The `BiLMSource` a user named.

    Args:
        model: str or None. A training run directory, a directory holding
            `options.json` and `weights.hdf5` (an export),
            `OPTIONS.json,WEIGHTS.hdf5`, or a pretrained model name
            (`keras_elmo.pretrained.PRESETS`, downloaded once and cached).
        options: str or None. An official options file (with `weights`);
            a path or an http(s) URL.
        weights: str or None. Its hdf5 weights (a path or a URL).
        flag: str. How the user gave `model`, for messages.

    Returns:
        A `BiLMSource`.
    """
    if model is not None and (options is not None or weights is not None):
        raise KerasElmoError(
            f"Give either {flag} or --options/--weights, not both."
        )
    if model is not None and "," in model and not os.path.exists(model):
        options, weights = model.split(",", 1)
        model = None
    if model in pretrained.PRESETS and not os.path.exists(model):
        files = pretrained.fetch(model)
        description = f"the pretrained model {model!r}"
        if "model" in files:  # an ELMoForManyLangs model folder
            return BiLMSource(description, files["model"])
        return BiLMSource(description, files["options"], files["weights"])
    if model is not None:
        if not os.path.exists(model):
            raise FileNotFoundError(
                f"{flag} {model}: no such file or directory, nor a "
                "pretrained model name (`keras-elmo presets` lists them)."
            )
        if not os.path.isdir(model):
            raise KerasElmoError(
                f"{flag} {model} is a file; expected a training run "
                "directory, an export directory, or OPTIONS.json,WEIGHTS.hdf5 "
                "(or --options and --weights)."
            )
        return _from_directory(model, flag)
    if options is None or weights is None:
        raise KerasElmoError(
            "Give the biLM with --options OPTIONS.json --weights "
            f"WEIGHTS.hdf5, or {flag} DIR (a keras-elmo train output or an "
            "export directory)."
        )
    return BiLMSource(
        f"{options} + {weights}",
        pretrained.local_file(options),
        pretrained.local_file(weights),
    )

"""The one resolver: whatever names a biLM becomes a `BiLMSource`.

Every entry point classifies its source here, with the same rules:
`keras_elmo.load_bilm`, `ELMoEmbedding("...")`, `--model`, `--init-from`,
`--options`/`--weights` and `keras-elmo download`. The kinds (`KINDS`):

- a pretrained model name (`keras_elmo.pretrained.PRESETS`), downloaded
  once into the cache;
- an `http(s)://` URL, or a pair of them (options, weights);
- official `options.json` + hdf5 weights: two paths (or URLs), or one
  string `OPTIONS.json,WEIGHTS.hdf5`;
- an export directory: `options.json` + `weights.hdf5` (what `keras-elmo
  export-weights` writes), or any folder holding exactly one
  `*options*.json` and one `*weights*.hdf5` file (e.g. bilm-tf's test
  model, `options.json` + `lm_weights.hdf5`);
- a training run directory (`keras-elmo train --output`);
- an ELMoForManyLangs model folder (or a folder holding just one);
- a `.keras` file holding one `BiLM`.

The dispatcher imports the loaders (`formats/`, `training/`, `pretrained/`)
inside its functions; they never call back up, and importing this module
does not load TensorFlow (`keras-elmo download` stays light).
"""

import os

from keras_elmo.errors import BiLMSourceError
from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import WeightFileError

# What a source may be, for the "nothing matches" error.
KINDS = (
    "a pretrained model name (`keras-elmo presets` lists them)",
    "an http(s):// URL, or two (options, weights)",
    "OPTIONS.json,WEIGHTS.hdf5 (official files, paths or URLs)",
    "an export directory (options.json + weights.hdf5, or one *options*.json "
    "and one *weights*.hdf5 file)",
    "a training run directory (the --output of keras-elmo train)",
    "an ELMoForManyLangs model folder (config.json, char.dic, *.pkl)",
    "a .keras file holding one BiLM",
)
# Files only an ELMoForManyLangs model folder has (a run has config.json
# too): any of them makes a folder one, and its loader names what is wrong.
_ELMO_FOR_MANY_LANGS_FILES = (
    "char.dic",
    "word.dic",
    "token_embedder.pkl",
    "encoder.pkl",
)


class BiLMSource:
    """The weights of a biLM, read at most once.

    Build it with `open_source`. `kind` says what it is (`"files"`,
    `"elmo_for_many_langs"`, `"run"`, `"keras"`); `bilm()` loads the biLM,
    `load_bilm(**kwargs)` builds one with other `BiLM` arguments,
    `bilm_size()` gives its size as `BiLM` arguments, and
    `initialize(model, vocabulary)` copies its weights into an
    `ELMoLanguageModel` (the softmax too when the source has one for the
    same vocabulary).
    """

    def __init__(
        self, kind, description, path=None, weights=None, cached=False
    ):
        self.kind = kind
        self.description = description
        # A preset's files, read from the download cache.
        self.cached = cached
        # For "files": the options file (or dict); else the file or folder.
        self.path = path
        self.weights = weights
        self._loaded = None

    @property
    def options(self):
        """The input file or folder the source reads (for output checks):
        the options file, model folder or .keras file; None for a run."""
        if self.kind == "run" or isinstance(self.path, dict):
            return None
        return self.path

    @property
    def run(self):
        """The run directory of a `"run"` source, else None."""
        return self.path if self.kind == "run" else None

    def _load(self):
        """`(bilm, softmax, vocabulary)`; softmax and vocabulary may be
        None. Read once."""
        if self._loaded is None:
            self._loaded = _READERS[self.kind](self)
        return self._loaded

    def bilm(self):
        """The source's `BiLM` (stateless, as loaded)."""
        return self._load()[0]

    def load_bilm(self, vocabulary=None, **kwargs):
        """A `BiLM` of the source built with extra `BiLM` arguments
        (`stateful=True`, `dtype`, ...); `vocabulary` is checked against a
        word-input biLM's table."""
        if self.kind == "files":
            from keras_elmo.formats.bilm_tf import read_bilm

            return read_bilm(self.path, self.weights, vocabulary, **kwargs)
        if self.kind == "elmo_for_many_langs" and vocabulary is None:
            from keras_elmo.formats.elmo_for_many_langs import (
                load_elmo_for_many_langs,
            )

            return load_elmo_for_many_langs(self.path, **kwargs)
        bilm = _with_arguments(self.bilm(), kwargs)
        if vocabulary is not None:
            from keras_elmo.layers.token_encoders.word_encoder import (
                check_bilm_vocabulary,
            )

            check_bilm_vocabulary(bilm.encoder, vocabulary, self.description)
        return bilm

    def vocabulary(self):
        """The source's vocabulary (a run's, or the `vocab.txt` beside an
        export's options), or None."""
        return self._load()[2]

    def bilm_size(self):
        """The biLM's size, as the `BiLM` arguments of `BILM_KEYS`."""
        from keras_elmo.training.run_directory import RunDirectory
        from keras_elmo.training.sizes import size_of

        if self.kind == "run":
            return dict(RunDirectory(self.path).read_config().bilm)
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


# === Readers: one per kind, `(bilm, softmax, vocabulary)` ===


def _read_files(source):
    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.formats.bilm_tf import read_bilm
    from keras_elmo.training.run_directory import EXPORT_SOFTMAX
    from keras_elmo.training.run_directory import VOCAB_FILE
    from keras_elmo.training.run_directory import read_softmax

    bilm = read_bilm(source.path, source.weights)
    if isinstance(source.path, dict):
        return bilm, None, None
    directory = os.path.dirname(source.path)
    softmax_file = os.path.join(directory, EXPORT_SOFTMAX)
    vocab_file = os.path.join(directory, VOCAB_FILE)
    softmax = vocabulary = None
    if os.path.isfile(softmax_file) and os.path.isfile(vocab_file):
        softmax = read_softmax(softmax_file)
        vocabulary = Vocabulary.from_file(vocab_file)
    elif bilm.encoder.needs_vocabulary and os.path.isfile(vocab_file):
        vocabulary = Vocabulary.from_file(vocab_file)
    return bilm, softmax, vocabulary


def _read_elmo_for_many_langs(source):
    from keras_elmo.formats.elmo_for_many_langs import load_elmo_for_many_langs

    # A biLM without a softmax.
    return load_elmo_for_many_langs(source.path), None, None


def _read_run(source):
    from keras_elmo.training.run_directory import RunDirectory

    model, vocabulary, _ = RunDirectory(source.path).load()
    softmax = (model.softmax_kernel.numpy(), model.softmax_bias.numpy())
    return model.bilm, softmax, vocabulary


def _read_keras_file(source):
    import keras

    from keras_elmo.layers.bilm import BiLM

    try:
        model = keras.saving.load_model(source.path)
    except (OSError, ValueError, TypeError) as error:
        raise WeightFileError(
            f"Could not load {source.path} as a Keras model file: {error}"
        ) from None
    found = [x for x in _layers_of(model) if isinstance(x, BiLM)]
    if len(found) != 1:
        raise BiLMSourceError(
            f"{source.description}: the model holds {len(found)} BiLM "
            "layers; a .keras source must hold exactly one."
        )
    return found[0], None, None


_READERS = {
    "files": _read_files,
    "elmo_for_many_langs": _read_elmo_for_many_langs,
    "run": _read_run,
    "keras": _read_keras_file,
}


def _layers_of(layer):
    """`layer` and every layer it holds (a BiLM as an `ELMoEmbedding`'s
    `bilm` too), depth first."""
    yield layer
    children = list(getattr(layer, "layers", None) or [])
    inner = getattr(layer, "bilm", None)
    if inner is not None:
        children.append(inner)
    for child in children:
        yield from _layers_of(child)


def _with_arguments(bilm, kwargs):
    """`bilm`, or a copy built with other `BiLM` arguments and its
    weights."""
    if not kwargs:
        return bilm
    from keras_elmo.layers.bilm import BiLM

    try:
        copy = BiLM.from_config({**bilm.get_config(), **kwargs})
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


# === Classification ===


def _name(flag, source):
    """How the user gave `source`, for messages: `--model X` or
    `load_bilm('X')`."""
    return f"{flag} {source}" if flag else f"load_bilm({source!r})"


def _files(options, weights, progress):
    from keras_elmo import pretrained

    if isinstance(options, dict):
        description = f"the options dict + {weights}"
    else:
        description = f"{options} + {weights}"
        options = pretrained.local_file(os.fspath(options), progress)
    return BiLMSource(
        "files",
        description,
        options,
        pretrained.local_file(os.fspath(weights), progress),
    )


def _from_preset(name, progress):
    from keras_elmo import pretrained

    preset = pretrained.get_preset(name)
    paths = pretrained.fetch(preset, progress=progress)
    description = f"the pretrained model {preset.name!r}"
    if preset.kind == "bilm-tf":
        return BiLMSource(
            "files", description, paths["options"], paths["weights"], True
        )
    if preset.kind == "elmo_for_many_langs":
        return BiLMSource(
            "elmo_for_many_langs", description, paths["model"], cached=True
        )
    raise KerasElmoError(
        f"Preset {preset.name!r} has kind {preset.kind!r}, which this "
        "version of keras_elmo cannot load (it loads "
        f"{', '.join(pretrained.presets.KINDS)})."
    )


def _found(path, limit=10):
    """What lies at `path`, in words, for the "nothing matches" error."""
    if not os.path.isdir(path):
        return "a file"
    names = sorted(os.listdir(path))
    if not names:
        return "an empty folder"
    shown = ", ".join(names[:limit])
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f"a folder holding {shown}{more}"


def _nothing_matches(path, flag):
    kinds = "; ".join(KINDS)
    return BiLMSourceError(
        f"{_name(flag, path)}: expected a training run directory or "
        f"another biLM source ({kinds}); found neither: {_found(path)}."
    )


def _is_elmo_for_many_langs_dir(path):
    return any(
        os.path.isfile(os.path.join(path, name))
        for name in _ELMO_FOR_MANY_LANGS_FILES
    )


def _only_file(path, word, endings):
    """The one file of `path` whose name holds `word` and ends with one of
    `endings` (bilm-tf's `*_options.json`, `*_weights.hdf5`), or None."""
    matches = [
        os.path.join(path, name)
        for name in sorted(os.listdir(path))
        if word in name
        and name.endswith(endings)
        and os.path.isfile(os.path.join(path, name))
    ]
    return matches[0] if len(matches) == 1 else None


def _from_directory(path, flag):
    from keras_elmo.training.run_directory import EXPORT_OPTIONS
    from keras_elmo.training.run_directory import EXPORT_WEIGHTS
    from keras_elmo.training.run_directory import RunDirectory

    # Before the run check: both folders have a config.json.
    if _is_elmo_for_many_langs_dir(path):
        return BiLMSource(
            "elmo_for_many_langs", f"the ELMoForManyLangs model in {path}", path
        )
    if RunDirectory(path).is_run():
        return BiLMSource("run", f"the run in {path}", path)
    options = os.path.join(path, EXPORT_OPTIONS)
    weights = os.path.join(path, EXPORT_WEIGHTS)
    if not (os.path.isfile(options) and os.path.isfile(weights)):
        options = _only_file(path, "options", ".json")
        weights = _only_file(path, "weights", (".hdf5", ".h5"))
    if options is not None and weights is not None:
        return BiLMSource("files", f"the export in {path}", options, weights)
    inner = [
        os.path.join(path, name)
        for name in sorted(os.listdir(path))
        if os.path.isdir(os.path.join(path, name))
        and _is_elmo_for_many_langs_dir(os.path.join(path, name))
    ]
    if len(inner) == 1:  # an archive unpacked with its folder
        return _from_directory(inner[0], flag)
    raise _nothing_matches(path, flag)


def _from_path(path, flag):
    if os.path.isdir(path):
        return _from_directory(path, flag)
    if path.endswith(".keras"):
        return BiLMSource("keras", f"the Keras file {path}", path)
    raise BiLMSourceError(
        f"{_name(flag, path)} is a file; expected a training run directory, "
        "an export directory, a .keras file, or OPTIONS.json,WEIGHTS.hdf5 "
        "(or the options and weights files separately)."
    )


def _looks_like_path(source):
    return os.sep in source or source.endswith(
        (".json", ".hdf5", ".h5", ".keras")
    )


def classify(source, weights=None, flag=None, progress=True):
    """The `BiLMSource` of `source` (and `weights`), by the rules of the
    module docstring; files of names and URLs are downloaded into the
    cache if needed.

    Args:
        source: str, `os.PathLike` or dict (parsed options, with `weights`).
        weights: str or None. The hdf5 weights (a path or a URL) that go
            with an options file.
        flag: str or None. How the user gave `source` (`"--model"`), for
            messages; None for the Python API.
        progress: bool. Print download progress. Defaults to `True`.
    """
    from keras_elmo import pretrained

    if weights is not None:
        return _files(source, weights, progress)
    if isinstance(source, dict):
        raise KerasElmoError(
            "Parsed options (a dict) need their weights: "
            "load_bilm(options, weight_file)."
        )
    if not isinstance(source, (str, os.PathLike)):
        raise KerasElmoError(
            "A biLM source is a str or a path; received "
            f"{type(source).__name__}. It may be: {'; '.join(KINDS)}."
        )
    source = os.fspath(source)
    if os.path.exists(source):
        return _from_path(source, flag)
    if "," in source:
        options, weights = source.split(",", 1)
        return _files(options, weights, progress)
    if pretrained.is_url(source):
        return _from_path(
            pretrained.cached_file(source, progress=progress), flag
        )
    if source in pretrained.PRESETS or not _looks_like_path(source):
        return _from_preset(source, progress)
    raise BiLMSourceError(
        f"{_name(flag, source)}: no such file or directory, nor a "
        "pretrained model name (`keras-elmo presets` lists them)."
    )


def open_source(model=None, options=None, weights=None, flag="--model"):
    """The `BiLMSource` a user named on the command line.

    Args:
        model: str or None. Any source `classify` accepts.
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
    if model is not None:
        return classify(model, flag=flag)
    if options is None or weights is None:
        raise KerasElmoError(
            "Give the biLM with --options OPTIONS.json --weights "
            f"WEIGHTS.hdf5, or {flag} DIR (a keras-elmo train output or an "
            "export directory)."
        )
    return classify(options, weights, flag="--options")


def download(source, progress=True, verify=False):
    """Downloads a remote source into the cache: `{role: local path}`.

    Args:
        source: str. A pretrained model name, an http(s) URL, or
            `OPTIONS_URL,WEIGHTS_URL`.
        progress: bool. Print download progress. Defaults to `True`.
        verify: bool. Also check the SHA-256 of cached copies against the
            cache index (a damaged copy is fetched again). Defaults to
            `False`.
    """
    from keras_elmo import pretrained

    parts = source.split(",", 1)
    if len(parts) == 2 and all(pretrained.is_url(part) for part in parts):
        return {
            role: pretrained.cached_file(part, progress=progress, verify=verify)
            for role, part in zip(("options", "weights"), parts)
        }
    if pretrained.is_url(source):
        path = pretrained.cached_file(source, progress=progress, verify=verify)
        return {"file": path}
    if os.path.exists(source) or _looks_like_path(source):
        raise BiLMSourceError(
            f"{source!r} is a local path; keras-elmo download takes the "
            "sources that need the network: a pretrained model name, an "
            "http(s) URL, or OPTIONS_URL,WEIGHTS_URL."
        )
    preset = pretrained.get_preset(source)
    return pretrained.fetch(preset, progress=progress, verify=verify)


def load_bilm(source, weights=None, vocabulary=None, **kwargs):
    """Builds a `BiLM` from any biLM source.

    `source` may be a pretrained model name (`"original"`, `"zh"`; see
    `keras_elmo.pretrained.PRESETS`), an `http(s)://` URL, an official
    `options.json` (with `weights`, the hdf5 file; both may be URLs, or
    one string `"OPTIONS.json,WEIGHTS.hdf5"`), an export directory, a
    training run directory, an ELMoForManyLangs model folder or a `.keras`
    file holding a `BiLM`: the same sources `keras-elmo embed --model`
    accepts (see `keras_elmo.loading`). Names and URLs are downloaded once
    into the cache.

    Official files: `n_characters` 261 or 262, files without `CNN_proj`
    and without `W_P_0`, and word-input biLMs (options without `char_cnn`)
    load; every dataset is checked against the shape the options imply
    (see `keras_elmo.formats.bilm_tf.read_bilm`).

    Args:
        source: str or path (or the parsed options dict, with `weights`).
        weights: str or None, the hdf5 weights (path or URL) of an options
            file. Defaults to `None`.
        vocabulary: for a word-input biLM, optionally its vocabulary (a
            path, a list of tokens or a `keras_elmo.data.Vocabulary`),
            checked against the table. Defaults to `None`.
        **kwargs: extra `BiLM` arguments, e.g. `stateful=True`,
            `dropout`; and `progress=False` to download quietly.

    Returns:
        A built `keras_elmo.layers.BiLM` holding the weights.

    Example:

    >>> bilm = keras_elmo.load_bilm(
    ...     "tests/fixtures/bilm-tf/model/options.json",
    ...     "tests/fixtures/bilm-tf/model/lm_weights.hdf5")
    >>> bilm.count_params()
    105120
    >>> keras_elmo.load_bilm("tests/fixtures/bilm-tf/model").count_params()
    105120
    >>> bilm = keras_elmo.load_bilm(
    ...     "tests/fixtures/elmo_for_many_langs/word_model")
    >>> bilm.token_encoder
    'elmo_for_many_langs'
    """
    progress = kwargs.pop("progress", True)
    source = classify(source, weights, progress=progress)
    try:
        return source.load_bilm(vocabulary, **kwargs)
    except WeightFileError as error:
        if not source.cached:
            raise
        raise WeightFileError(
            f"{error} ({source.description}, read from the cache. Delete "
            "its files there to download them again.)"
        ) from None

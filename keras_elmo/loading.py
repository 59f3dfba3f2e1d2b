"""The one resolver: whatever names a biLM becomes a `BiLMSource`.

Every entry point classifies its source here, with the same rules:
`keras_elmo.load_bilm`, `ELMoEmbedding("...")`, the exports and the biLM
a command line runs or starts training from (`elmo_core.pretrained.
download`, behind `keras-elmo download`, follows the same rules for the
sources that need the network). The kinds (in words: `summaries()`),
each one class of `keras_elmo.sources`:

- a pretrained model name (`elmo_core.pretrained.PRESETS`), downloaded
  once into the cache (`PretrainedModel`);
- an `http(s)://` URL, downloaded into the cache and then read as the
  file or folder it is, or a pair of them (options, weights);
- official `options.json` + hdf5 weights: two paths (or URLs), or one
  string `OPTIONS.json,WEIGHTS.hdf5` (`OfficialFiles`);
- an export directory: `options.json` + `weights.hdf5` (what `keras-elmo
  export-weights` writes), or any folder holding exactly one
  `*options*.json` and one `*weights*.hdf5` file (e.g. bilm-tf's test
  model, `options.json` + `lm_weights.hdf5`) (`ExportFolder`);
- a training run directory (what training writes, `RunFolder`);
- an ELMoForManyLangs model folder, or a folder holding just one
  (`ELMoForManyLangsFolder`);
- a `.keras` file holding one `BiLM` (`KerasFile`).

The resolver only resolves: it walks the kinds registered with
`keras_elmo.sources.register_source_kind`, in their `order`, and builds
the first whose `matches` holds; a path no kind matches is explained by
the kind it nearly is (`near_miss`). The kinds import their formats
(`formats/`, `training/`, `pretrained/`) inside their methods and never
call back up, and importing this module does not load TensorFlow.
"""

import os

# The kinds register themselves on import.
import keras_elmo.sources  # noqa: F401
from elmo_core.errors import BiLMSourceError
from elmo_core.errors import KerasElmoError
from elmo_core.errors.blame import about
from elmo_core.errors.blame import blame
from elmo_core.files.paths import check_input_file
from elmo_core.files.paths import check_path
from elmo_core.files.paths import kind_of
from keras_elmo.sources.bilm_source import source_kinds
from keras_elmo.sources.official_files import OfficialFiles

# What the resolver itself reads: a URL is downloaded, then read as the
# kind it is.
URLS = "an http(s):// URL, or two (options, weights)"


def summaries():
    """What a source may be, in words: each kind's summary, and URLs."""
    return [k.summary for k in source_kinds() if k.summary] + [URLS]


def _error(message, source, argument):
    """A `BiLMSourceError` about `source`, given as the Python argument
    `argument` (None: `load_bilm`'s `source`)."""
    argument = argument or "source"
    return BiLMSourceError(f"`{argument}` {message}", argument, received=source)


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


def _folders_inside(path):
    """The message for a folder holding several biLM folders, or None."""
    inner = [
        name
        for name in sorted(os.listdir(path))
        if os.path.isdir(os.path.join(path, name))
        and any(
            kind.matches(os.path.join(path, name))
            for kind in source_kinds(local=True)
        )
    ]
    if len(inner) > 1:
        return (
            f"holds {len(inner)} biLM folders: {', '.join(inner)}. Which "
            f"one? Pass its folder ({os.path.join(path, inner[0])}, ...)."
        )
    return None


def _no_source(path):
    """The message for a local `path` that no kind matches nor nearly
    matches."""
    if os.path.isdir(path):
        return _folders_inside(path) or (
            "is no biLM source: expected a training run directory or "
            f"another biLM source ({'; '.join(summaries())}); found "
            f"neither: {_found(path)}."
        )
    if not os.path.isfile(path):
        return (
            f"is {kind_of(os.stat(path).st_mode)}; expected a biLM source: "
            f"a file or folder of one of: {'; '.join(summaries())}."
        )
    return (
        "is a file; expected a training run directory, an export "
        "directory, a .keras file, or OPTIONS.json,WEIGHTS.hdf5 (or the "
        "options and weights files separately)."
    )


def _from_path(path, argument):
    """The source of the local file or folder `path`."""
    kinds = source_kinds(local=True)
    for kind in kinds:
        if kind.matches(path):
            return kind.open(path, argument=argument)
    for kind in kinds:
        message = kind.near_miss(path)
        if message is not None:
            raise _error(message, path, argument)
    raise _error(_no_source(path), path, argument)


def classify(source, weights=None, argument=None, progress=True):
    """The `BiLMSource` of `source` (and `weights`), by the rules of the
    module docstring; files of names and URLs are downloaded into the
    cache if needed.

    Args:
        source: str, `os.PathLike` or dict (parsed options, with `weights`).
        weights: str or None. The hdf5 weights (a path or a URL) that go
            with an options file.
        argument: str or None. The Python argument `source` came in
            (`"init_from"`), for messages; None: `load_bilm`'s `source`.
        progress: bool. Print download progress. Defaults to `True`.

    Every error of the resolution is about `source` (or `weights`), and
    names it as its argument.
    """
    name = argument or "source"
    try:
        return _classify(source, weights, argument, progress)
    except KerasElmoError as error:
        if error.argument not in (name, "weights"):
            blame(error, name)
        raise


def _classify(source, weights, argument, progress):
    if weights is not None:
        if not isinstance(weights, (str, os.PathLike)):
            raise KerasElmoError(
                "`weights` must be the path or URL of the hdf5 weights.",
                "weights",
                received=weights,
            )
        if not isinstance(source, dict):
            check_path(source, argument or "source")
        return OfficialFiles.fetch(source, weights, progress)
    if isinstance(source, dict):
        raise KerasElmoError(
            "Parsed options (a dict) need their weights: "
            "load_bilm(options, weight_file)."
        )
    if not isinstance(source, (str, os.PathLike)) or not os.fspath(source):
        raise KerasElmoError(
            "A biLM source is a non-empty str or a path. It may be: "
            f"{'; '.join(summaries())}.",
            argument or "source",
            received=source,
        )
    source = os.fspath(source)
    if os.path.exists(source):
        return _from_path(source, argument)
    return _from_string(source, argument, progress)


def _from_string(source, argument, progress):
    """The source of a str that names no local path: a pair, a name or a
    URL."""
    from elmo_core import pretrained

    argument = argument or "source"
    name = f"`{argument}` {source!r}"
    if os.path.lexists(source):  # a broken link or a loop: say which
        check_input_file(source, f"`{argument}`", argument=argument)
    pretrained.check_url_scheme(source, name, argument)
    for kind in source_kinds(local=False):
        if kind.matches(source):
            return kind.open(source, progress, argument)
    if pretrained.is_url(source):
        return _from_path(
            pretrained.cached_file(source, progress=progress), argument
        )
    raise _error(
        "is no such file or directory, nor a pretrained model name "
        "(`keras-elmo presets` lists them).",
        source,
        argument,
    )


def load_bilm(source, weights=None, vocabulary=None, **kwargs):
    """Builds a `BiLM` from any biLM source.

    `source` may be a pretrained model name (`"original"`, `"zh"`; see
    `elmo_core.pretrained.PRESETS`), an `http(s)://` URL, an official
    `options.json` (with `weights`, the hdf5 file; both may be URLs, or
    one string `"OPTIONS.json,WEIGHTS.hdf5"`), an export directory, a
    training run directory, an ELMoForManyLangs model folder or a `.keras`
    file holding a `BiLM`: the same sources every command takes (see
    `keras_elmo.loading`). Names and URLs are downloaded once
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
            path, a list of tokens or a `elmo_core.ids.Vocabulary`),
            checked against the table. Defaults to `None`.
        **kwargs: extra `BiLM` arguments, e.g. `stateful=True`,
            `dropout`, `dtype="mixed_bfloat16"`; and `progress=False` to
            download quietly. The biLM always holds the source's own
            weights, frozen or trainable in the source alike: an argument
            that would change a size the weights fix (`units`,
            `num_layers`, `filters`, ...) or that `BiLM` does not take is
            refused by a `KerasElmoError` naming it (and the first weight
            it no longer fits).

    Precision: the biLM computes in `dtype` when given, else in the
    global Keras policy (float32 unless set), whatever precision a
    training run directory was trained in (`--mixed-precision`): a run
    and its export give the same numbers.

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
    # What goes wrong reading its files is about `source` too.
    with about("source"):
        return source.load_bilm(vocabulary, **kwargs)

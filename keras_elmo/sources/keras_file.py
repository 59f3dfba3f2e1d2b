"""`KerasFile`: a `.keras` file holding one `BiLM`.

A `.keras` file is a zip of `config.json` (the model's layers and their
arguments), `model.weights.h5` and `metadata.json`, and Keras builds every
layer the config names before it reads a weight. So before Keras sees the
file, it gets the audit of every other weight format:

- what the file is: a truncated file, an HDF5 file or a pickle renamed
  `.keras`, or a zip without `config.json` is named as such;
- every zip member streamed and checked (`elmo_core.files.zip_archive`: sizes
  declared and inflated, CRCs, a bound on all it inflates), so a damaged
  member or a deflate bomb is refused, never a raw `BadZipFile`;
- `config.json` read within `MAX_CONFIG_BYTES` and parsed within the
  bounds of `formats.json_text` (integer length, nesting depth);
- each `BiLM` the config describes checked by `BiLM`'s own argument
  checks and the memory bound (`layers.bilm_size.check_bilm_memory`)
  before anything is built;
- a file load is local only: an `ELMoEmbedding` whose config names its
  biLM as a source (a name, a URL, a path) instead of holding it, or a
  vocabulary file instead of its tokens, is refused (Keras would fetch
  or read it while loading).
"""

import os
import re
import zipfile

from elmo_core.errors import BiLMSourceError
from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from elmo_core.errors.shown import shown
from elmo_core.files.zip_archive import MAX_COMPRESSION_RATIO
from elmo_core.files.zip_archive import read_member
from elmo_core.files.zip_archive import zip_problem
from elmo_core.formats.json_text import parse_json
from keras_elmo.sources.bilm_data import BiLMData
from keras_elmo.sources.bilm_source import BiLMSource
from keras_elmo.sources.bilm_source import real_files
from keras_elmo.sources.bilm_source import register_source_kind

# A BiLM's config.json is 2 KB; a large functional model's a few MB.
MAX_CONFIG_BYTES = 16 << 20
# The first bytes of the files most often renamed `.keras` by mistake.
_SIGNATURES = (
    (
        b"\x89HDF\r\n\x1a\n",
        "an HDF5 file (a Keras 2 .h5 model, or hdf5 weights)",
    ),
    (b"\x80", "a Python pickle (a PyTorch .pkl or .pt file?)"),
)
_ZIP_SIGNATURE = b"PK\x03\x04"


@register_source_kind
class KerasFile(BiLMSource):
    """A `.keras` file (`keras.Model.save`) whose model holds exactly one
    `BiLM` (at any depth, an `ELMoEmbedding`'s included).

    Args:
        path: str. The file.
    """

    kind = "keras"
    summary = "a .keras file holding one BiLM"
    order = 40

    def __init__(self, path):
        super().__init__(f"the Keras file {path}")
        self.path = path

    @classmethod
    def matches(cls, source):
        # A regular file: a pipe or device so named is refused by kind.
        return source.endswith(".keras") and os.path.isfile(source)

    @classmethod
    def near_miss(cls, path):
        """An exported model file (`.onnx`, `.tflite`): a model too, but
        one the runtimes load."""
        from elmo_core.formats.exported_file import KINDS

        if os.path.isdir(path):
            return None
        suffix = os.path.splitext(path)[1].lower()
        for kind in KINDS.values():
            if suffix == kind.suffix:
                # The runtime classes are named after the kinds' titles.
                return (
                    f"is an exported {kind.title} model (keras-elmo "
                    f"{kind.command}), not weights to build a Keras BiLM "
                    "from; it runs without TensorFlow in elmo_core.runtime: "
                    f"elmo_core.runtime.{kind.title}BiLM({path!r}) "
                    "(`keras-elmo embed` runs it too)."
                )
        return None

    def inputs(self):
        return real_files(self.path)

    def load_model(self):
        """The model the file holds, loaded by Keras after the audit of
        the module docstring (for the export of the whole model)."""
        import keras  # the package's classes register as it is imported

        _check_file(self.path)
        try:
            return keras.saving.load_model(self.path)
        except (
            OSError,
            ValueError,
            TypeError,
            KeyError,
            RecursionError,
            zipfile.BadZipFile,
        ) as error:
            raise WeightFileError(
                f"Could not load {self.path} as a Keras model file: "
                f"{_what_failed(error)}"
            ) from None

    def _read(self):
        from keras_elmo.layers.bilm import BiLM

        model = self.load_model()
        found = [x for x in _layers_of(model) if isinstance(x, BiLM)]
        if len(found) != 1:
            raise BiLMSourceError(
                f"{self.description}: the model holds {len(found)} BiLM "
                "layers; a .keras source must hold exactly one."
            )
        return BiLMData(found[0], description=self.description)


# Keras names a class it cannot find deep inside the error of the model
# around it ("<class Functional> could not be deserialized ... Could not
# locate class 'X'").
_MISSING_CLASS = re.compile(r"Could not locate (?:class|function) '([^']+)'")


def _what_failed(error):
    """Keras's error in a few words: the class it could not find, by its
    name, where that is what failed."""
    missing = _MISSING_CLASS.search(str(error))
    if missing is None:
        return shown(str(error), 300)
    return (
        f"it holds a class that is not registered in this process, "
        f"{missing.group(1)!r}. Import the module that defines it (and "
        "registers it with @keras.saving.register_keras_serializable) "
        "before loading, or pass it in custom_objects."
    )


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


def _check_file(path):
    """The audit of the module docstring, before Keras reads the file."""
    problem = _kind_problem(path)
    if problem is None:
        size = os.path.getsize(path)
        problem = zip_problem(path, MAX_COMPRESSION_RATIO * max(size, 1))
    if problem is not None:
        raise WeightFileError(
            f"{path} is not a whole .keras file: {problem}. Save the model "
            "again with model.save(path), or copy the file again."
        )
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        if "config.json" not in names:
            torch = any(name.endswith("data.pkl") for name in names)
            kind = "a PyTorch file (torch.save)" if torch else "a zip"
            raise WeightFileError(
                f"{path} is {kind} without config.json, not a .keras file "
                "(keras.Model.save writes one)."
            )
        data = read_member(archive, "config.json", MAX_CONFIG_BYTES)
    if data is None:
        raise WeightFileError(
            f"{path}: its config.json is larger than {MAX_CONFIG_BYTES:,} "
            "bytes; no model's is. The file is damaged or hostile."
        )
    config = parse_json(data, f"{path}: config.json", WeightFileError)
    for entry in _layer_configs(config):
        _check_layer(entry, path)


def _kind_problem(path):
    """None for a file that starts as a whole zip, else what it is."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise BiLMSourceError(f"Cannot read {path}: {e.strerror}") from None
    if not head:
        return "it is empty"
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return f"it is {kind}, renamed .keras"
    if not head.startswith(_ZIP_SIGNATURE):
        return "it is not a zip archive, as a .keras file is"
    if not zipfile.is_zipfile(path):
        return (
            "it starts as a zip but has no zip directory at its end "
            "(truncated?)"
        )
    return None


def _layer_configs(config):
    """Every serialized object (a dict with `class_name` and `config`) in
    a parsed config, found without recursion."""
    pending = [config]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if isinstance(item.get("config"), dict) and "class_name" in item:
                yield item
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _is_ours(entry, class_name):
    registered = entry.get("registered_name")
    module = entry.get("module")
    return entry.get("class_name") == class_name and (
        registered == f"keras_elmo>{class_name}"
        or (isinstance(module, str) and module.startswith("keras_elmo."))
    )


def _check_layer(entry, path):
    config = entry["config"]
    if _is_ours(entry, "ELMoEmbedding"):
        bilm, vocabulary = config.get("bilm"), config.get("vocabulary")
        if not isinstance(bilm, dict):
            raise WeightFileError(
                f"{path}: its ELMoEmbedding names its biLM as {shown(bilm)} "
                "instead of holding it; loading a .keras file reads only "
                "that file (no download, no other file). Save the model "
                "with model.save after the biLM is loaded."
            )
        if isinstance(vocabulary, str):
            raise WeightFileError(
                f"{path}: its ELMoEmbedding names the vocabulary file "
                f"{shown(vocabulary)} instead of holding its tokens; "
                "loading a .keras file reads only that file."
            )
    if _is_ours(entry, "BiLM"):
        _check_bilm(config, path)


def _check_bilm(config, path):
    """`BiLM`'s own checks of its arguments, and the memory bound, before
    Keras builds it."""
    from elmo_core.settings.bilm_size import check_bilm_config
    from keras_elmo.layers.bilm import BiLM

    check_bilm_config(config, f"{path} (config.json)")
    # The constructor itself (`from_config` would wrap its message in a
    # dump of the whole config); the dtype does not change any size.
    arguments = {k: v for k, v in config.items() if k != "dtype"}
    try:
        BiLM(**arguments)
    except KerasElmoError as error:
        context = f"{path}: config.json describes no valid BiLM"
        raise error.within(context, WeightFileError) from None
    except (ValueError, TypeError) as error:
        raise WeightFileError(
            f"{path}: config.json describes no valid BiLM: "
            f"{shown(str(error), 300)}"
        ) from None

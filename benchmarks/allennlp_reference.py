"""AllenNLP's own PyTorch ELMo, imported from a source checkout.

AllenNLP is archived and cannot be installed beside a current torch (its
last release pins `torch<1.13`), but its ELMo modules need only torch,
NumPy and h5py. `load(source)` runs the real, unmodified files

    allennlp/data/token_indexers/elmo_indexer.py,
    allennlp/nn/util.py, allennlp/nn/initializers.py,
    allennlp/modules/{highway, scalar_mix, encoder_base,
    lstm_cell_with_projection, elmo_lstm, elmo}.py

from a checkout of https://github.com/allenai/allennlp (`source` is the
folder holding `allennlp/`), and stands in for the rest of the package
with small stubs that play no part in the numbers: the package
`__init__` files (which import the whole data pipeline), the registry
and parameter classes, `cached_path` (local files only) and the data
classes (`Token`, `Vocabulary`, `Batch`, ... raise if used; pass
character ids, e.g. `keras_elmo.batch_to_ids`, which are AllenNLP's).
Its checkout holds no model weights: `Elmo(options, weights, ...)`
reads an AllenNLP-format pair (`keras_elmo.save_bilm` writes one).

For the benchmarks only: the package never imports it.
"""

import importlib.util
import os
import sys
import types

MODULES = (
    "allennlp.data.token_indexers.elmo_indexer",
    "allennlp.nn.util",
    "allennlp.nn.initializers",
    "allennlp.modules.highway",
    "allennlp.modules.scalar_mix",
    "allennlp.modules.encoder_base",
    "allennlp.modules.lstm_cell_with_projection",
    "allennlp.modules.elmo_lstm",
    "allennlp.modules.elmo",
)


def load(source):
    """The module `allennlp.modules.elmo` of the checkout at `source`.

    Raises FileNotFoundError when `source` holds no
    `allennlp/modules/elmo.py`.
    """
    root = os.path.join(os.path.abspath(source), "allennlp")
    if not os.path.isfile(os.path.join(root, "modules", "elmo.py")):
        raise FileNotFoundError(
            f"no AllenNLP checkout at {source!r}: expected "
            f"{os.path.join(root, 'modules', 'elmo.py')}"
        )
    if "allennlp.modules.elmo" in sys.modules:
        return sys.modules["allennlp.modules.elmo"]
    _stubs(root)
    for name in MODULES:
        _run_file(name, os.path.join(root, *name.split(".")[1:]) + ".py")
    return sys.modules["allennlp.modules.elmo"]


def _module(name, path=None, **attributes):
    module = types.ModuleType(name)
    if path is not None:
        module.__path__ = [path]
    module.__dict__.update(attributes)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, module)
    return module


def _run_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


class _Registrable:
    @classmethod
    def register(cls, name, constructor=None, exist_ok=False):
        return lambda subclass: subclass


def _unavailable(what):
    def fail(*args, **kwargs):
        raise NotImplementedError(f"{what} is stubbed: pass character ids")

    return fail


def _lazy_groups_of(iterable, size):
    iterator = iter(iterable)
    while True:
        group = [x for _, x in zip(range(size), iterator)]
        if not group:
            return
        yield group


def _stubs(root):
    _module("allennlp", root)
    _module(
        "allennlp.common",
        os.path.join(root, "common"),
        FromParams=type("FromParams", (), {}),
        Registrable=_Registrable,
    )
    _module(
        "allennlp.common.checks",
        ConfigurationError=type("ConfigurationError", (Exception,), {}),
    )
    _module("allennlp.common.file_utils", cached_path=_local_path)
    _module(
        "allennlp.common.util",
        int_to_device=lambda device: device,
        is_distributed=lambda: False,
        is_global_primary=lambda: True,
        lazy_groups_of=_lazy_groups_of,
        pad_sequence_to_length=_unavailable("pad_sequence_to_length"),
    )
    _module("allennlp.nn", os.path.join(root, "nn"))
    _module("allennlp.modules", os.path.join(root, "modules"))
    _module("allennlp.data", os.path.join(root, "data"))
    for name, attribute in (
        ("instance", "Instance"),
        ("vocabulary", "Vocabulary"),
        ("batch", "Batch"),
        ("fields", "TextField"),
    ):
        _module(f"allennlp.data.{name}", **{attribute: _unavailable(attribute)})
    token = _unavailable("Token")
    _module("allennlp.data.tokenizers", Token=token)
    _module("allennlp.data.tokenizers.token_class", Token=token)
    _module(
        "allennlp.data.token_indexers",
        os.path.join(root, "data", "token_indexers"),
    )
    _module(
        "allennlp.data.token_indexers.token_indexer",
        TokenIndexer=type("TokenIndexer", (_Registrable,), {}),
        IndexedTokenList=dict,
    )


def _local_path(path, *args, **kwargs):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"a local file was expected: {path}")
    return path

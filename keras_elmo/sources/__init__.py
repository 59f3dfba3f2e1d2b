"""The kinds of biLM source: where a biLM's weights are, one file per kind.

`BiLMSource` (bilm_source.py) is the contract every kind follows:
`matches` (its format's one rule), `read()` (a `BiLMData`: the biLM, the
softmax, the vocabulary), `inputs()` (every file it reads) and a
`description`. The kinds: official files (`OfficialFiles`), an export
folder (`ExportFolder`), a training run (`RunFolder`), an ELMoForManyLangs
model folder (`ELMoForManyLangsFolder`), a `.keras` file (`KerasFile`) and
a pretrained model name (`PretrainedModel`). Each registers itself
(`register_source_kind`) with the order `keras_elmo.loading` tries it in;
the kinds import the formats inside their methods and never call back
up, so importing them does not load TensorFlow.
"""

from keras_elmo.sources.bilm_data import BiLMData
from keras_elmo.sources.bilm_source import BiLMSource
from keras_elmo.sources.bilm_source import register_source_kind
from keras_elmo.sources.bilm_source import source_kinds
from keras_elmo.sources.elmo_for_many_langs_folder import ELMoForManyLangsFolder
from keras_elmo.sources.export_folder import ExportFolder
from keras_elmo.sources.keras_file import KerasFile
from keras_elmo.sources.official_files import OfficialFiles
from keras_elmo.sources.pretrained_model import PretrainedModel
from keras_elmo.sources.run_folder import RunFolder

__all__ = [
    "BiLMData",
    "BiLMSource",
    "ELMoForManyLangsFolder",
    "ExportFolder",
    "KerasFile",
    "OfficialFiles",
    "PretrainedModel",
    "RunFolder",
    "register_source_kind",
    "source_kinds",
]

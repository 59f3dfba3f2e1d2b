"""Tokens to the biLM's input ids on the host, with NumPy: word
vocabularies (`vocabulary`) and the inputs of every token encoder kind
(`host_ids`). Character ids alone are `elmo_core.characters`; the same
rules inside TensorFlow are `keras_elmo.data`."""

from elmo_core.ids.host_ids import TokenBatcher
from elmo_core.ids.vocabulary import Vocabulary

__all__ = ["TokenBatcher", "Vocabulary"]

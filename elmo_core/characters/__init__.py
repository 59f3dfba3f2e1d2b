"""The ELMo character-id facts, in one place, with NumPy only (SPEC §2-3).

Importable without TensorFlow, so that a runtime (ONNX Runtime, LiteRT)
user can turn tokens into the biLM's input with this package alone.

- a token is its UTF-8 bytes, invalid sequences dropped (Python's
  `encode("utf-8", "ignore")`), cut to 48 bytes (a multi-byte character may be
  cut in two);
- the row is `[begin-of-word] + bytes + [end-of-word] + [padding char]...`,
  50 ids long; `<S>` and `</S>` map to the sentence boundary characters;
- every id is shifted by +1 so that id 0 is free for padding *tokens*, whole
  rows of zeros; a token is present if any of its ids is non-zero.
"""

from elmo_core.characters.ids import BOS_CHAR
from elmo_core.characters.ids import BOS_CHARACTER_IDS
from elmo_core.characters.ids import BOS_TOKEN
from elmo_core.characters.ids import BOW_CHAR
from elmo_core.characters.ids import DEFAULT_FILTERS
from elmo_core.characters.ids import EOS_CHAR
from elmo_core.characters.ids import EOS_CHARACTER_IDS
from elmo_core.characters.ids import EOS_TOKEN
from elmo_core.characters.ids import EOW_CHAR
from elmo_core.characters.ids import MAX_CHARACTER_ID
from elmo_core.characters.ids import MAX_CHARACTERS_PER_TOKEN
from elmo_core.characters.ids import MAX_TOKEN_BYTES
from elmo_core.characters.ids import NUM_CHARACTER_IDS
from elmo_core.characters.ids import OPTIONS_NUM_CHARACTERS
from elmo_core.characters.ids import PAD_CHAR
from elmo_core.characters.ids import batch_to_ids
from elmo_core.characters.ids import check_filters  # noqa: F401 (the package's own)
from elmo_core.characters.ids import token_mask  # noqa: F401 (the package's own)
from elmo_core.characters.ids import token_to_ids  # noqa: F401 (the package's own)

__all__ = [
    "BOS_CHAR",
    "BOS_CHARACTER_IDS",
    "BOS_TOKEN",
    "BOW_CHAR",
    "DEFAULT_FILTERS",
    "EOS_CHAR",
    "EOS_CHARACTER_IDS",
    "EOS_TOKEN",
    "EOW_CHAR",
    "MAX_CHARACTERS_PER_TOKEN",
    "MAX_CHARACTER_ID",
    "MAX_TOKEN_BYTES",
    "NUM_CHARACTER_IDS",
    "OPTIONS_NUM_CHARACTERS",
    "PAD_CHAR",
    "batch_to_ids",
]

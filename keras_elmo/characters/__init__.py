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

from keras_elmo.characters.ids import BOS_CHAR  # noqa: F401
from keras_elmo.characters.ids import BOS_CHARACTER_IDS  # noqa: F401
from keras_elmo.characters.ids import BOS_TOKEN  # noqa: F401
from keras_elmo.characters.ids import BOW_CHAR  # noqa: F401
from keras_elmo.characters.ids import DEFAULT_FILTERS  # noqa: F401
from keras_elmo.characters.ids import EOS_CHAR  # noqa: F401
from keras_elmo.characters.ids import EOS_CHARACTER_IDS  # noqa: F401
from keras_elmo.characters.ids import EOS_TOKEN  # noqa: F401
from keras_elmo.characters.ids import EOW_CHAR  # noqa: F401
from keras_elmo.characters.ids import MAX_CHARACTER_ID  # noqa: F401
from keras_elmo.characters.ids import MAX_CHARACTERS_PER_TOKEN  # noqa: F401
from keras_elmo.characters.ids import MAX_TOKEN_BYTES  # noqa: F401
from keras_elmo.characters.ids import NUM_CHARACTER_IDS  # noqa: F401
from keras_elmo.characters.ids import OPTIONS_NUM_CHARACTERS  # noqa: F401
from keras_elmo.characters.ids import PAD_CHAR  # noqa: F401
from keras_elmo.characters.ids import batch_to_ids  # noqa: F401
from keras_elmo.characters.ids import check_filters  # noqa: F401
from keras_elmo.characters.ids import token_mask  # noqa: F401
from keras_elmo.characters.ids import token_to_ids  # noqa: F401

"""The token encoders a `BiLM` can read its tokens with.

`TokenEncoder` (token_encoder.py) is the contract every kind follows;
`register_token_encoder` adds a kind to `TOKEN_ENCODERS`, the
`BiLM(token_encoder=...)` names. One file per kind: characters
(bilm-tf's char CNN), words (bilm-tf's word-input biLM) and
elmo_for_many_langs (ELMoForManyLangs' character vocabulary). Their
string-to-id rules live in `keras_elmo.data`.
"""

# Importing the kinds registers them.
from keras_elmo.layers.token_encoders.character_encoder import CharacterEncoder
from keras_elmo.layers.token_encoders.elmo_for_many_langs_encoder import (
    ELMoForManyLangsEncoder,
)
from keras_elmo.layers.token_encoders.token_encoder import TOKEN_ENCODERS
from keras_elmo.layers.token_encoders.token_encoder import TokenEncoder
from keras_elmo.layers.token_encoders.token_encoder import get_token_encoder
from keras_elmo.layers.token_encoders.token_encoder import (
    register_token_encoder,
)
from keras_elmo.layers.token_encoders.word_encoder import WordEncoder

__all__ = [
    "TOKEN_ENCODERS",
    "CharacterEncoder",
    "ELMoForManyLangsEncoder",
    "TokenEncoder",
    "WordEncoder",
    "get_token_encoder",
    "register_token_encoder",
]

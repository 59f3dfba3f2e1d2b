"""The token encoders a `BiLM` can read its tokens with.

A token encoder turns the input of one token (50 character ids, or one word
id) into its context-insensitive embedding `e` of `projection_dim`. Each
kind is a small plain object that holds every fact about its input in one
place: the input name, shape and dtype, the `<S>`/`</S>` inputs, the mask
rule, the checks, the encode function, and how text becomes its input. It
creates its sublayers, and the `BiLM` sets them as its own attributes, so
their weights live where they always have (`bi_lm/char_cnn/...`).

`TOKEN_ENCODERS` maps the `BiLM(token_encoder=...)` names to the kinds; a
new kind is one class with the same members and one entry there.
"""

from keras_elmo.layers.token_encoders.character_encoder import CharacterEncoder
from keras_elmo.layers.token_encoders.elmo_for_many_langs_encoder import (
    ELMoForManyLangsEncoder,
)
from keras_elmo.layers.token_encoders.word_encoder import WordEncoder

TOKEN_ENCODERS = {
    CharacterEncoder.name: CharacterEncoder,
    WordEncoder.name: WordEncoder,
    ELMoForManyLangsEncoder.name: ELMoForManyLangsEncoder,
}

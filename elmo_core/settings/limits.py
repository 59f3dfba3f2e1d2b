"""How many layers a biLM may be made of (NumPy-free, TensorFlow-free).

At most `MAX_LAYERS` LSTM layers (per direction), highway layers, filter
widths or mixes of one `ELMoEmbedding`: the published biLMs have 2, 2
and 7 (and AllenNLP taggers use 1 or 2 mixes); each is a Keras
layer that takes milliseconds to create, so 256 builds in about a second,
while a file's (or an argument's) 10**6 would take an hour before any
memory bound bit.
"""

MAX_LAYERS = 256

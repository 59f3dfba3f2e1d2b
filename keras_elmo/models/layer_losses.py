"""How a distilled student's layer is compared with its teacher's (the
names only: `keras-elmo distill --help` reads them without TensorFlow;
the arithmetic is `keras_elmo.models.distilled_language_model`)."""

# Per position of `<S> tokens </S>`: "mse", the mean squared difference
# over the teacher layer's width; "cosine", 1 - the cosine of the two
# vectors (their direction only); "both", the sum of the two.
LAYER_LOSSES = ("mse", "cosine", "both")
DEFAULT_LAYER_LOSS = "mse"
# The weights of the two losses of a distilled student: the language
# model's and the layers'.
DEFAULT_LM_WEIGHT = 1.0
DEFAULT_LAYER_WEIGHT = 1.0

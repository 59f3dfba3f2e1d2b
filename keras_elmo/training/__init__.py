"""Pretraining: a run's vocabulary, size and config from what a user
gives, the compiled model, the run directory (checkpoints), the fit loop
with its callback and time budget, held-out perplexity, distillation
from a teacher, and `tf.distribute`. The settings of a run, without
Keras, are `elmo_core.settings`."""

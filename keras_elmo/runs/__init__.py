"""A training run from what a user gives: `train` and `distill`, the
library behind `keras-elmo train` and `keras-elmo distill` (named at the
top, `keras_elmo.train`). They set a run up in named steps and hand it to
`keras_elmo.training`, which trains it."""

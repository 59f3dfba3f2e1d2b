"""Pretraining: the training config and sizes, the run directory, the fit
loop and tf.distribute."""

"""Pretraining: the training config and sizes, the recipe chosen by corpus
size, the learning rate and the time budget, the run directory, the fit
loop and tf.distribute."""

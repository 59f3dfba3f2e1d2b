"""Optimizers that keep sparse (softmax and embedding) gradients sparse."""

from keras_elmo.optimizers.sparse_adagrad import SparseAdagrad
from keras_elmo.optimizers.sparse_adam import SparseAdam

__all__ = ["SparseAdagrad", "SparseAdam"]

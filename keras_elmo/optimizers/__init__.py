"""Optimizers that keep sparse (softmax and embedding) gradients sparse,
the loss scaling of float16 training, and the learning-rate schedule of
a run (a warm-up, then constant or a linear decay)."""

from keras_elmo.optimizers.loss_scale_optimizer import LossScaleOptimizer
from keras_elmo.optimizers.sparse_adagrad import SparseAdagrad
from keras_elmo.optimizers.sparse_adam import SparseAdam
from keras_elmo.optimizers.warmup_decay import WarmupDecay

__all__ = ["LossScaleOptimizer", "SparseAdagrad", "SparseAdam", "WarmupDecay"]

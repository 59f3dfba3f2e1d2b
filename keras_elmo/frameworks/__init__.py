"""Which framework a feature needs: the layers run on every Keras backend;
training from text and the exports are TensorFlow programs, and say so
(`require_tensorflow`) before anything else."""

from keras_elmo.frameworks.tensorflow_only import require_tensorflow

__all__ = ["require_tensorflow"]

"""`model.evaluate` / `predict` batches reported to an
`elmo_core.progress.Progress` that counts batches."""

import keras


class BatchProgress(keras.callbacks.Callback):
    """A Keras callback: each finished test or predict batch updates
    `progress` (a `Progress` counting batches)."""

    def __init__(self, progress):
        super().__init__()
        self.progress = progress

    def on_test_batch_end(self, batch, logs=None):
        self.progress.update(batch + 1)

    on_predict_batch_end = on_test_batch_end

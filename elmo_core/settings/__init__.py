"""What defines a training run, without Keras: the sizes of a biLM and
their arithmetic (`sizes`, `bilm_size`, `limits`), the recipe by corpus
size, the config saved as `config.json` (`training_config`), the
precision by CPU, the time budget, what a batch must hold (`batches`)
and a distillation's settings (`distillation`). The command line shows
these defaults; `keras_elmo.training` runs them."""

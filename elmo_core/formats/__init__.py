"""Files of other programs and of this package, read within bounds with
NumPy (and h5py): bilm-tf's `options.json` and hdf5 datasets, JSON,
ELMoForManyLangs' folders and the PyTorch pickles they hold, the layout
of run and export folders, and the metadata of exported `.onnx` /
`.tflite` files. Building a Keras `BiLM` from them is
`keras_elmo.formats`."""

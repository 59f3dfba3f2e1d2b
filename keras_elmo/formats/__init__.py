"""Weight files in and out as Keras `BiLM`s: bilm-tf's options.json +
hdf5 (`read_bilm`, `save_bilm`) and ELMoForManyLangs model folders. The
files themselves are read within bounds by `elmo_core.formats`."""

"""Weight files in and out: bilm-tf's options.json + hdf5, ELMoForManyLangs
model folders, and the PyTorch pickle reader they need."""

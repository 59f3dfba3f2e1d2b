"""Files in and out: bilm-tf's options.json + hdf5, ELMoForManyLangs
model folders and the PyTorch pickle reader they need, the layout of run
and export folders (`run_layout`), and the format of an exported `.onnx` /
`.tflite` biLM (`exported_file`, NumPy only)."""

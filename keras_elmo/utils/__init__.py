"""The package's plumbing, below every other folder: public names loaded
on first use (`lazy`), the Keras backend probe (`backend`), progress lines
(`progress`) and the version (`version`). No TensorFlow.
"""

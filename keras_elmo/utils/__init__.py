"""The package's plumbing, below every other folder: public names loaded
on first use (`lazy`), a function run once a module is imported
(`after_import`), the Keras backend probe (`backend`), progress lines
(`progress`) and the version (`version`). No TensorFlow.
"""

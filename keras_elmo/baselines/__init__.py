"""Count language models to measure a biLM against (NumPy only)."""

"""The choices and limits of the exports, without TensorFlow (the command
line's `--help` shows them; the export modules check against them)."""

# Precisions each deployment format offers (float16 did not load in ONNX
# Runtime, so ONNX has none).
ONNX_PRECISIONS = ("float32", "int8")
LITERT_PRECISIONS = ("float32", "float16", "int8")

# SavedModel requests above this many token positions (batch x max_len) are
# refused with a message rather than risking the server's memory.
DEFAULT_MAX_BATCH_TOKENS = 200_000

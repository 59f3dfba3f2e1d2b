"""The limits of the SavedModel export, without TensorFlow (the command
line's `--help` shows them; the export checks against them). The choices
of the ONNX and LiteRT files are in `elmo_core.formats.exported_file`."""

# SavedModel requests above this many token positions (batch x max_len) are
# refused with a message rather than risking the server's memory.
DEFAULT_MAX_BATCH_TOKENS = 200_000

"""`keras-elmo train`: pretrain a biLM on a corpus (resumable)."""

from keras_elmo_cli.arguments import QUIET_DONE
from keras_elmo_cli.arguments import add_quiet
from keras_elmo_cli.arguments import library_arguments
from keras_elmo_cli.train_flags import add_train_flags


def add_parser(commands):
    parser = commands.add_parser(
        "train",
        help="pretrain a biLM on your corpus (resumable)",
        description="Trains an ELMo biLM with model.fit on text files of one "
        "whitespace-tokenised sentence a line (.gz allowed). Running the "
        "same command again on the same --output resumes from the last "
        "checkpoint, optimizer state and data position included. "
        "keras_elmo.train(...) from Python.",
    )
    add_train_flags(parser)
    add_quiet(parser, QUIET_DONE)
    parser.set_defaults(run=run)


def run(args):
    """Runs `keras-elmo train`: `keras_elmo.train` with the flags."""
    import keras_elmo

    keras_elmo.train(**library_arguments(args, keras_elmo.train))

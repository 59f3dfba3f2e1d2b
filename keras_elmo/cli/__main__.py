from keras_elmo.cli import command

command()

from keras_elmo_cli import command

command()

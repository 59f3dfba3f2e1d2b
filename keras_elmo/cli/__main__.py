import sys

from keras_elmo.cli import main

sys.exit(main())

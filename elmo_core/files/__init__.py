"""What lies at a user's paths and what the package writes there.

- `outputs`: every output is written to a temporary name and renamed when
  complete (`atomic_output`, `hdf5_output`); output paths are checked
  against the command's inputs and other people's files.
- `paths`: input paths checked for what lies there before anything is read.
- `zip_archive`: a zip reader that checks every size, offset and count.

NumPy at most, no TensorFlow.
"""

from elmo_core.files.outputs import PARTIAL_SUFFIX  # noqa: F401
from elmo_core.files.outputs import atomic_output  # noqa: F401
from elmo_core.files.outputs import check_inputs_kept  # noqa: F401
from elmo_core.files.outputs import check_output_directory  # noqa: F401
from elmo_core.files.outputs import check_output_file  # noqa: F401
from elmo_core.files.outputs import disk_error  # noqa: F401
from elmo_core.files.outputs import hdf5_output  # noqa: F401

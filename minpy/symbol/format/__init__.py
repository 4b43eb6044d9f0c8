"""Files: minpy's symbol JSON, MXNet 1.x symbol JSON, MXNet ``.params`` (NDArray)
files. MXNet's checkpoints (``PREFIX-symbol.json`` + ``PREFIX-%04d.params``) are
read and written by :mod:`minpy.nn.checkpoint`, public as ``minpy.model``."""

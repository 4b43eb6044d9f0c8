"""Files: minpy's symbol JSON, MXNet 1.x symbol JSON, MXNet ``.params`` (NDArray)
files, and MXNet checkpoints (``PREFIX-symbol.json`` + ``PREFIX-%04d.params``)."""

"""Graph passes run when a symbol is bound: shape and dtype inference, gradient by
graph extension, elementwise and BatchNorm+ReLU fusion, mirror (recompute in
backward), memory planning and its reports."""

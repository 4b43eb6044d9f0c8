"""``mx.mod`` / ``mx.module``: MXNet 1.x's module package (``mxnet/module/``), its layout.

- :class:`~minpy.mxnet.module.module.Module`,
  :class:`~minpy.mxnet.module.base_module.BaseModule`
- :class:`~minpy.mxnet.module.bucketing_module.BucketingModule` (one symbol per bucket key)
- :class:`~minpy.mxnet.module.sequential_module.SequentialModule` (modules chained)
- :class:`~minpy.mxnet.module.python_module.PythonModule`,
  :class:`~minpy.mxnet.module.python_module.PythonLossModule` (modules written in Python)
"""
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .module import Module
from .python_module import PythonLossModule, PythonModule
from .sequential_module import SequentialModule
from ...nn.io.batch import DataBatch, DataDesc

__all__ = ["BaseModule", "BucketingModule", "Module", "SequentialModule", "PythonModule",
           "PythonLossModule", "DataBatch", "DataDesc"]

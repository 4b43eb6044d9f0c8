"""MinPy's ``minpy.utils``: ``gradient_checker.quick_grad_check`` and ``minprof.minprof``.

Both are defined in :mod:`minpy.compat`; these modules keep MinPy's import paths.
"""

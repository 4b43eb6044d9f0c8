"""MXNet 1.x's training API over minpy: ``module`` (Module, BaseModule), ``metric``,
``callback``, ``initializer``, ``optimizer``, ``bucketing``. Its public paths are
also ``minpy.module``, ``minpy.metric``, ``minpy.callback``, ``minpy.initializer``."""

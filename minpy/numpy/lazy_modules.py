"""Module paths whose module objects are made on first import (issue 27: import time).

``import minpy`` must not pay for modules a program may never use (NumPy's ``ma``,
``polynomial`` ...; MXNet's ``minpy.metric``), yet ``import minpy.ma`` and ``from
minpy.lib.stride_tricks import sliding_window_view`` must keep working. A
:class:`ModuleFinder` on ``sys.meta_path`` answers for a fixed set of dotted names, each
with a function that returns its module object (made then, or an existing module it
names, imported then); the import system then registers that object in ``sys.modules``
under the name and binds it on the parent package, as for any module.
"""
import importlib.abc
import importlib.machinery
import sys

__all__ = ["ModuleFinder", "install"]


class ModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader of the dotted names in ``factories``.

    Args:
        owner: the name of the module that installs it (one finder per owner: installing
            again replaces the previous one, as a reload does).
        factories: {full module name: function of no arguments returning the module
            object}. A returned module that already has a ``__spec__`` keeps it (an
            alias of a real module stays that module, spec included).
    """

    def __init__(self, owner, factories):
        self.owner = owner
        self.factories = dict(factories)
        self._specs = {}

    def find_spec(self, fullname, path=None, target=None):
        """A spec for the names this finder answers for; None for any other."""
        if fullname not in self.factories:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        """The module object of ``spec.name``, from its factory."""
        module = self.factories[spec.name]()
        self._specs[spec.name] = getattr(module, "__spec__", None)
        return module

    def exec_module(self, module):
        """Nothing to run; restores the module's own ``__spec__`` (which the import system
        replaced by the alias's) when it had one."""
        name = module.__spec__.name
        own = self._specs.pop(name, None)
        if own is not None and own.name != name:
            module.__spec__ = own

    def __repr__(self):
        return f"<minpy.numpy.lazy_modules.ModuleFinder of {self.owner}>"


def install(owner, factories):
    """Put a :class:`ModuleFinder` for ``factories`` at the front of ``sys.meta_path``
    (replacing one ``owner`` installed before) and return it."""
    finder = ModuleFinder(owner, factories)
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not (type(f).__name__ == "ModuleFinder"
                                and getattr(f, "owner", None) == owner)]
    sys.meta_path.insert(0, finder)
    return finder

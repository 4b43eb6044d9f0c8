"""minpy.core.tree: the one pytree walker (flatten / unflatten / map / structure)."""
import collections

import numpy
import pytest
from hypothesis import given, strategies as st

import minpy
from minpy.core import tree

Pair = collections.namedtuple("Pair", "a b")


def _example():
    return {"w": [1, 2.0, (3, None)], "p": Pair(4, [5]),
            "o": collections.OrderedDict(z=6, y=7),
            "d": collections.defaultdict(list, {"k": 8})}


def test_round_trip_keeps_container_types_and_order():
    x = _example()
    leaves, td = tree.flatten(x)
    assert leaves == [1, 2.0, 3, 4, 5, 6, 7, 8]
    y = tree.unflatten(td, leaves)
    assert y == x
    assert type(y["p"]) is Pair and type(y["o"]) is collections.OrderedDict
    assert type(y["d"]) is collections.defaultdict and y["d"].default_factory is list
    assert list(y["o"]) == ["z", "y"]
    assert y["w"][2][1] is None


def test_structure_is_hashable_and_compares_by_value():
    a, b = _example(), _example()
    assert tree.structure(a) == tree.structure(b)
    assert hash(tree.structure(a)) == hash(tree.structure(b))
    b["o"] = collections.OrderedDict(y=7, z=6)        # other key order: other structure
    assert tree.structure(a) != tree.structure(b)
    assert tree.structure([1, 2]) != tree.structure((1, 2))
    assert tree.structure(Pair(1, 2)) != tree.structure((1, 2))


def test_a_leaf_alone_and_none():
    assert tree.flatten(3.0) == ([3.0], None)
    assert tree.unflatten(None, [5]) == 5
    assert tree.flatten(None)[0] == []
    assert tree.unflatten(tree.structure(None), []) is None


def test_unflatten_refuses_extra_leaves():
    with pytest.raises(ValueError, match="more leaves"):
        tree.unflatten(tree.structure([1, 2]), [1, 2, 3])


def test_map_tree_over_several_trees_and_mismatch():
    x = _example()
    doubled = tree.map_tree(lambda u, v: u + v, x, x)
    assert doubled["p"] == Pair(8, [10]) and doubled["o"]["y"] == 14
    with pytest.raises(ValueError, match="different structures"):
        tree.map_tree(lambda u, v: u, [1, 2], (1, 2))


def test_is_leaf_keeps_a_node_whole():
    x = [[1, 2], (3, [4])]
    assert tree.leaves(x, is_leaf=lambda e: type(e) is tuple) == [1, 2, (3, [4])]


def test_register_a_user_type():
    class Box:
        def __init__(self, v, tag):
            self.v, self.tag = v, tag

    tree.register(Box, lambda b: (b.tag, [b.v]), lambda tag, ch: Box(ch[0], tag))
    leaves, td = tree.flatten([Box(1.5, "t")])
    assert leaves == [1.5]
    back = tree.unflatten(td, [2.5])
    assert type(back[0]) is Box and back[0].v == 2.5 and back[0].tag == "t"
    with pytest.raises(TypeError, match="must be a type"):
        tree.register("Box", None, None)


def test_arrays_are_leaves():
    a = minpy.ones(3)
    h = numpy.ones(2)
    assert tree.leaves({"a": a, "h": [h]}) == [a, h]


_leaf = st.one_of(st.integers(-5, 5), st.floats(-2, 2, allow_nan=False), st.none())


def _trees(children):
    return st.one_of(st.lists(children, max_size=3),
                     st.lists(children, max_size=3).map(tuple),
                     st.dictionaries(st.text("abc", min_size=1, max_size=2), children,
                                     max_size=3),
                     st.tuples(children, children).map(lambda t: Pair(*t)),
                     st.dictionaries(st.text("xy", min_size=1, max_size=2), children,
                                     max_size=2).map(collections.OrderedDict))


@given(st.recursive(_leaf, _trees, max_leaves=12))
def test_flatten_unflatten_round_trip_property(x):
    leaves, td = tree.flatten(x)
    assert tree.unflatten(td, leaves) == x
    assert tree.leaves(x) == leaves
    assert tree.structure(tree.map_tree(lambda v: v, x)) == td

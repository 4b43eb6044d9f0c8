"""Shared checkers and graph strategy for memory-plan tests."""
from hypothesis import strategies as st


def lifetimes(order, ins, outs, ext):
    """First write and last use (positions in ``order``) of every internal entry."""
    writer, last = {}, {}
    for i, n in enumerate(order):
        for e in ins[n]:
            if e not in ext:
                last[e] = i
        for e in outs[n]:
            if e not in ext:
                writer[e] = last[e] = i
    return writer, last


@st.composite
def dags(draw, ext_bytes, sizes, max_nodes=14):
    """Random planner inputs (order, ins, outs, entry bytes, in-place candidates,
    external entries): two external inputs of ``ext_bytes``, entries of ``sizes``."""
    entries, ext = ["a0", "a1"], {"a0", "a1"}
    order, ins, outs, inp, eb = [], {}, {}, {}, {"a0": ext_bytes, "a1": ext_bytes}
    for i in range(draw(st.integers(1, max_nodes))):
        k = draw(st.integers(0, 3))
        ii = [draw(st.sampled_from(entries)) for _ in range(k)]
        oo = [f"e{i}_{j}" for j in range(draw(st.integers(1, 2)))]
        for e in oo:
            eb[e] = draw(st.sampled_from(sizes))
        if k:
            inp[i] = draw(st.lists(st.tuples(st.integers(0, k - 1),
                                             st.integers(0, len(oo) - 1)), max_size=2))
        order.append(i)
        ins[i], outs[i] = ii, oo
        entries += oo
    heads = draw(st.sets(st.sampled_from(entries[2:]), max_size=2))
    return order, ins, outs, eb, inp, ext | heads

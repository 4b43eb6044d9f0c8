"""Test matrices shared by the linear-algebra tests."""
import numpy


def well_conditioned(shape, rng, hermitian=False, cplx=False):
    """A host stack of n x n matrices Q diag(s) P^H with s in [1, 3] (P = Q if
    ``hermitian``: then symmetric/Hermitian positive definite); ``shape`` = (*batch, n, n)."""
    *batch, n, _ = shape
    out = []
    for _ in range(int(numpy.prod(batch, dtype=int))):
        def unitary():
            x = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if cplx else 0)
            return numpy.linalg.qr(x)[0]
        q = unitary()
        p = q if hermitian else unitary()
        out.append((q * rng.uniform(1, 3, n)) @ p.conj().T)
    return numpy.reshape(out, shape)

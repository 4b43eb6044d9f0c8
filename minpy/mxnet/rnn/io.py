"""``mx.rnn.io``: MXNet 1.x's text helpers for recurrent models.

:func:`encode_sentences` turns token lists into integer ids (building the
vocabulary); :class:`BucketSentenceIter` is :class:`minpy.mxnet.bucketing.
BucketSentenceIter` (batches padded to buckets by length, each with its
``bucket_key``, for ``mx.mod.BucketingModule``).

See also mxnet.rnn.io.
"""
from ..bucketing import BucketSentenceIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n", start_label=0,
                     unknown_token=None):
    """Encode sentences (lists of string tokens) as lists of integer ids, MXNet's way.

    Args:
        sentences: a list of lists of tokens.
        vocab: a dict token -> id to use (and extend with ``unknown_token``); None
            builds one, starting as ``{invalid_key: invalid_label}``.
        invalid_label: the id of ``invalid_key`` (skipped when numbering new tokens).
        invalid_key: the token of ``invalid_label`` (end of sentence).
        start_label: the first id given to a new token.
        unknown_token: with a given ``vocab``, the token an unknown token is mapped to
            (added to the vocabulary the first time, as MXNet).
    Returns:
        ``(encoded sentences, vocab)``.
    Raises:
        KeyError: a token not in a given ``vocab`` and no ``unknown_token``.

    See also mxnet.rnn.encode_sentences.
    """
    idx = start_label
    if vocab is None:
        vocab = {invalid_key: invalid_label}
        new_vocab = True
    else:
        new_vocab = False
    res = []
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise KeyError(f"encode_sentences: unknown token {word!r} (not in the "
                                   f"given vocab; pass unknown_token= to map such tokens)")
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        res.append(coded)
    return res, vocab

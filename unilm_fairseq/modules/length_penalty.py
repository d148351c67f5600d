"""GNMT's length penalty in fairseq's beam search.

fairseq ranks a finished hypothesis by its summed log-probability over ``L ** a``. The papers' decoders
divide by GNMT's ``((5 + L) / 6) ** a`` instead (Wu et al. 2016, cited for the "Length penalty" of
UniLMv2 (Bao et al. 2020) Appendix D / Table 10 and used with s2s-ft (Bao et al. 2021) Table 8's values).

``L`` is the same in both: the generated tokens with the final ``</s>``, not the start token. fairseq
divides by ``step + 1``, the length of the hypothesis it finalizes, ``</s>`` included. The papers do not
say whether [EOS] counts; the decoder released with s2s-ft counts it (a hypothesis whose [EOS] is its
``k``-th generated token gets ``((5 + k) / 6) ** a``), and so does this one, so the penalties of the
papers' tables mean the same here.
"""

import functools
import math

GNMT_OFFSET = 5.0  # Wu et al. 2016's constant: lp(L) = ((5 + L) / (5 + 1)) ** a


def gnmt_length_penalty(length: int, alpha: float) -> float:
    """GNMT's divisor ``((5 + length) / 6) ** alpha`` for a hypothesis of ``length`` tokens, </s> included."""
    return ((GNMT_OFFSET + length) / (GNMT_OFFSET + 1)) ** alpha


def gnmt_exponent(length: int, alpha: float) -> float:
    """The exponent ``e`` with ``length ** e == gnmt_length_penalty(length, alpha)``.

    For one token both divisors are 1 whatever the exponent, so any ``e`` will do.
    """
    if length == 1:
        return 0.0
    return math.log(gnmt_length_penalty(length, alpha)) / math.log(length)


class GNMTLengthPenalty:
    """Mixin for a fairseq ``SequenceGenerator`` class: its ``len_penalty`` becomes GNMT's ``a``.

    fairseq's ``finalize_hypos`` divides the scores of the hypotheses finishing at ``step`` by
    ``(step + 1) ** self.len_penalty``. They all have ``step + 1`` tokens, so setting the exponent for
    that length before each call gives GNMT's divisor exactly, with fairseq's own finalization.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gnmt_alpha = self.len_penalty

    def finalize_hypos(self, step: int, *args, **kwargs):
        self.len_penalty = gnmt_exponent(step + 1, self.gnmt_alpha)
        return super().finalize_hypos(step, *args, **kwargs)


@functools.lru_cache(maxsize=None)
def with_gnmt_length_penalty(generator_cls: type) -> type:
    """``generator_cls`` (``SequenceGenerator`` or a subclass) ranking hypotheses with GNMT's penalty."""
    return type(f"GNMT{generator_cls.__name__}", (GNMTLengthPenalty, generator_cls), {})

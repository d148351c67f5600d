"""n-gram blocking that works on CPU.

fairseq 0.12's ``SequenceGenerator`` hands ``NGramRepeatBlock`` its whole token
buffer, padding included. The CUDA kernel only reads the first ``step + 1``
columns, but the Python fallback compares against the buffer's last columns
(padding), so ``--no-repeat-ngram-size`` silently blocks nothing on CPU. This
subclass gives the fallback the generated prefix only. The fallback also blocks
nothing for unigrams (its slice ``[-(n - 1):]`` is the whole row when n is 1);
here, as in the CUDA kernel, size 1 bans every token of the prefix.
"""

import math

from fairseq.ngram_repeat_block import NGramRepeatBlock


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        """``tokens`` ``(bsz * beam, >= step + 1)``, ``lprobs`` ``(bsz * beam, V)``; banned -> -inf."""
        if self.use_extension:
            return super().forward(tokens, lprobs, bsz, beam_size, step)
        prefix = tokens[:, : step + 1]
        if self.no_repeat_ngram_size == 1:
            return lprobs.scatter(1, prefix.long(), -math.inf)
        return self._no_repeat_ngram(prefix, lprobs, bsz, beam_size, step)


def with_prefix_ngram_blocker(generator):
    """Swap a ``SequenceGenerator``'s n-gram blocker (if any) for :class:`PrefixNGramRepeatBlock`."""
    blocker = getattr(generator, "repeat_ngram_blocker", None)
    if blocker is not None:
        generator.repeat_ngram_blocker = PrefixNGramRepeatBlock(blocker.no_repeat_ngram_size)
    return generator

"""n-gram blocking that works on CPU.

fairseq 0.12's ``SequenceGenerator`` hands ``NGramRepeatBlock`` its whole token
buffer, padding included. The CUDA kernel only reads the first ``step + 1``
columns, but the Python fallback compares against the buffer's last columns
(padding), so ``--no-repeat-ngram-size`` silently blocks nothing on CPU. This
subclass gives the fallback the generated prefix only. The fallback also blocks
nothing for unigrams (its slice ``[-(n - 1):]`` is the whole row when n is 1),
while the CUDA kernel bans every token of the buffer, column 0 included. That
column is the start token, ``</s>``, which is also the end token: banning it
means no hypothesis can ever finish. Here size 1 bans exactly the generated
tokens, on either device.
"""

import math

from fairseq.ngram_repeat_block import NGramRepeatBlock


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        """``tokens`` ``(bsz * beam, >= step + 1)``, ``lprobs`` ``(bsz * beam, V)``; banned -> -inf."""
        if self.no_repeat_ngram_size == 1:
            generated = tokens[:, 1 : step + 1]  # column 0 is the start token, </s>
            return lprobs.scatter(1, generated.long(), -math.inf)
        if self.use_extension:
            return super().forward(tokens, lprobs, bsz, beam_size, step)
        return self._no_repeat_ngram(tokens[:, : step + 1], lprobs, bsz, beam_size, step)


def with_prefix_ngram_blocker(generator):
    """Swap a ``SequenceGenerator``'s n-gram blocker (if any) for :class:`PrefixNGramRepeatBlock`."""
    blocker = getattr(generator, "repeat_ngram_blocker", None)
    if blocker is not None:
        generator.repeat_ngram_blocker = PrefixNGramRepeatBlock(blocker.no_repeat_ngram_size)
    return generator

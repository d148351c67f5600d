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

Exempt tokens: an n-gram that contains one is never banned. UniLM (Dong et al. 2019) §3.1 removes
duplicated trigrams in beam search for summarization; the decoder released with s2s-ft blocks them
except those containing "." (its ignored words), so sentences may end the same way more than once.
"""

import math
from typing import Iterable

import torch
from fairseq.ngram_repeat_block import NGramRepeatBlock


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    """fairseq's n-gram blocker over the generated prefix, with optional exempt token ids."""

    def __init__(self, no_repeat_ngram_size: int, exempt: Iterable[int] = (), use_extension: bool = True):
        super().__init__(no_repeat_ngram_size, use_extension)
        self.exempt = tuple(sorted(set(int(t) for t in exempt)))

    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        """``tokens`` ``(bsz * beam, >= step + 1)``, ``lprobs`` ``(bsz * beam, V)``; banned -> -inf."""
        if not self.exempt:
            return self._block(tokens, lprobs, bsz, beam_size, step)
        # the bans without exemptions, found the same way (CUDA kernel or Python), then lifted
        banned = self._block(tokens, torch.zeros_like(lprobs), bsz, beam_size, step).isinf()  # (bsz*beam, V)
        exempt = torch.tensor(self.exempt, device=lprobs.device)
        banned[:, exempt] = False  # the n-gram would end with an exempt token
        # the n - 1 tokens the next one would complete an n-gram with (none for unigrams)
        context = tokens[:, max(step + 2 - self.no_repeat_ngram_size, 0) : step + 1]
        banned[torch.isin(context, exempt).any(1)] = False
        return lprobs.masked_fill(banned, -math.inf)

    def _block(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        if self.no_repeat_ngram_size == 1:
            generated = tokens[:, 1 : step + 1]  # column 0 is the start token, </s>
            return lprobs.scatter(1, generated.long(), -math.inf)
        if self.use_extension:
            return super().forward(tokens, lprobs, bsz, beam_size, step)
        return self._no_repeat_ngram(tokens[:, : step + 1], lprobs, bsz, beam_size, step)


def with_prefix_ngram_blocker(generator, exempt: Iterable[int] = ()):
    """Swap a ``SequenceGenerator``'s n-gram blocker (if any) for :class:`PrefixNGramRepeatBlock`.

    ``exempt``: token ids whose n-grams are never banned.
    """
    blocker = getattr(generator, "repeat_ngram_blocker", None)
    if blocker is not None:
        generator.repeat_ngram_blocker = PrefixNGramRepeatBlock(blocker.no_repeat_ngram_size, exempt)
    return generator

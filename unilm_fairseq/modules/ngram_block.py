"""n-gram blocking over the generated prefix, as tensor operations on any device.

fairseq 0.12's ``SequenceGenerator`` hands ``NGramRepeatBlock`` its whole token
buffer, padding included. The CUDA kernel only reads the first ``step + 1``
columns, but the Python fallback compares against the buffer's last columns
(padding), so ``--no-repeat-ngram-size`` silently blocks nothing on CPU. The
fallback also blocks nothing for unigrams (its slice ``[-(n - 1):]`` is the
whole row when n is 1), while the CUDA kernel bans every token of the buffer,
column 0 included. That column is the start token, ``</s>``, which is also the
end token: banning it means no hypothesis can ever finish. Here size 1 bans
exactly the generated tokens, on either device.

Without fairseq's CUDA extension (the fairseq-fixed wheel ships none) the
fallback is also slow: it copies the tokens to the host every step and walks
each hypothesis in Python, which made decoding on a GPU slower than on CPU. So the
bans are found by :func:`block_repeated_ngrams` instead, with a handful of
tensor operations over all hypotheses at once, on the tensors' own device and
without reading anything back to the host. The rule is the fallback's, over the
prefix (columns ``0 .. step``, the start token included): every earlier n-gram
of the row whose first ``n - 1`` tokens equal the row's last ``n - 1`` bans its
last token. Only when fairseq's extension is built and usable does its kernel
find the bans, as in fairseq.

Exempt tokens: an n-gram that contains one is never banned. UniLM (Dong et al. 2019) §3.1 removes
duplicated trigrams in beam search for summarization; the decoder released with s2s-ft blocks them
except those containing "." (its ignored words), so sentences may end the same way more than once.
"""

import math
from typing import Dict, Iterable, Optional

import torch
from fairseq.ngram_repeat_block import NGramRepeatBlock


def repeated_ngram_bans(tokens: torch.Tensor, step: int, size: int, exempt: Optional[torch.Tensor] = None):
    """The candidate bans of every row: ``(following, banned)``, both ``(rows, windows)``.

    ``tokens`` ``(rows, >= step + 1)``: only the prefix, columns ``0 .. step``, is read. For ``size`` 1
    the candidates are the generated tokens (columns ``1 .. step``, never the start token) and all are
    banned. For larger sizes each candidate is the last token of an n-gram of the prefix (every
    window of ``size`` columns), banned when the window's first ``size - 1`` tokens equal the
    prefix's last ``size - 1``; a prefix shorter than ``size`` has no window. ``exempt`` (a 1-D
    tensor of token ids on the tokens' device): a candidate that is exempt, or whose row's last
    ``size - 1`` tokens hold one, is not banned.
    """
    assert size >= 1, size
    prefix = tokens[:, : step + 1]
    if size == 1:
        following = prefix[:, 1:]
        banned = torch.ones_like(following, dtype=torch.bool)
    elif prefix.size(1) < size:
        following = prefix[:, :0]
        banned = torch.ones_like(following, dtype=torch.bool)
    else:
        windows = prefix.unfold(1, size, 1)  # (rows, step + 2 - size, size): a view, no copy
        context = prefix[:, prefix.size(1) - size + 1 :]  # the n - 1 tokens the next one follows
        following = windows[:, :, -1]
        banned = (windows[:, :, :-1] == context.unsqueeze(1)).all(2)
        if exempt is not None:
            banned &= ~torch.isin(context, exempt).any(1, keepdim=True)
    if exempt is not None:
        banned &= ~torch.isin(following, exempt)
    return following.long(), banned


def block_repeated_ngrams(
    tokens: torch.Tensor, lprobs: torch.Tensor, step: int, size: int, exempt: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """Set to -inf, in place, the log-probs of the tokens :func:`repeated_ngram_bans` bans; ``lprobs`` back.

    One indexed write over all rows, with no order to depend on: a token may be a candidate several
    times, and every write to one place carries the same value. A candidate that is not banned writes
    to its row's anchor instead: the largest banned token of the row, written -inf anyway, or, in a row
    with no ban, the row's first candidate, which gets its own log-prob back.
    """
    following, banned = repeated_ngram_bans(tokens, step, size, exempt)
    if following.size(1) == 0:
        return lprobs
    anchor = torch.where(banned, following, -1).amax(1, keepdim=True)  # (rows, 1); -1: no ban
    anchor = torch.where(anchor < 0, following[:, :1], anchor)
    targets = torch.where(banned, following, anchor)
    values = lprobs.gather(1, anchor).masked_fill_(banned.any(1, keepdim=True), -math.inf)
    rows = torch.arange(lprobs.size(0), device=lprobs.device).unsqueeze(1)
    # index_put_ rather than scatter_: on CPU, scatter_ into float16 log-probs of 320 x 30522 takes ~17 ms
    return lprobs.index_put_((rows, targets), values)


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    """fairseq's n-gram blocker over the generated prefix, with optional exempt token ids.

    Bans are found by :func:`block_repeated_ngrams` unless fairseq's CUDA extension is in use (built,
    usable and ``use_extension``), whose kernel then finds those of sizes above 1.
    """

    def __init__(self, no_repeat_ngram_size: int, exempt: Iterable[int] = (), use_extension: bool = True):
        super().__init__(no_repeat_ngram_size, use_extension)
        self.exempt = tuple(sorted(set(int(t) for t in exempt)))
        self._exempt_by_device: Dict[torch.device, torch.Tensor] = {}

    def exempt_ids(self, device: torch.device) -> Optional[torch.Tensor]:
        """The exempt ids as a tensor on ``device`` (made once per device), or None when there are none."""
        if not self.exempt:
            return None
        if device not in self._exempt_by_device:
            self._exempt_by_device[device] = torch.tensor(self.exempt, dtype=torch.long, device=device)
        return self._exempt_by_device[device]

    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        """``tokens`` ``(bsz * beam, >= step + 1)``, ``lprobs`` ``(bsz * beam, V)``; banned -> -inf."""
        rows = bsz * beam_size
        assert tokens.size(0) == rows and lprobs.size(0) == rows, (rows, tokens.shape, lprobs.shape)
        exempt = self.exempt_ids(lprobs.device)
        if self.use_extension and self.no_repeat_ngram_size > 1:
            return self._kernel_block(tokens, lprobs, bsz, beam_size, step, exempt)
        return block_repeated_ngrams(tokens, lprobs, step, self.no_repeat_ngram_size, exempt)

    def _kernel_block(self, tokens, lprobs, bsz: int, beam_size: int, step: int, exempt):
        """fairseq's CUDA kernel finds the bans of the prefix; exempt n-grams are then lifted."""
        if exempt is None:
            return self.call_cuda_extension(tokens, lprobs, bsz, beam_size, step)
        banned = self.call_cuda_extension(tokens, torch.zeros_like(lprobs), bsz, beam_size, step).isinf()
        banned[:, exempt] = False  # the n-gram would end with an exempt token
        # the n - 1 tokens the next one would complete an n-gram with
        context = tokens[:, max(step + 2 - self.no_repeat_ngram_size, 0) : step + 1]
        banned[torch.isin(context, exempt).any(1)] = False
        return lprobs.masked_fill(banned, -math.inf)


def with_prefix_ngram_blocker(generator, exempt: Iterable[int] = ()):
    """Swap a ``SequenceGenerator``'s n-gram blocker (if any) for :class:`PrefixNGramRepeatBlock`.

    ``exempt``: token ids whose n-grams are never banned.
    """
    blocker = getattr(generator, "repeat_ngram_blocker", None)
    if blocker is not None:
        generator.repeat_ngram_blocker = PrefixNGramRepeatBlock(blocker.no_repeat_ngram_size, exempt)
    return generator

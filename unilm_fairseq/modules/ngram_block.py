"""n-gram blocking that works on CPU.

fairseq 0.12's ``SequenceGenerator`` hands ``NGramRepeatBlock`` its whole token
buffer, padding included. The CUDA kernel only reads the first ``step + 1``
columns, but the Python fallback compares against the buffer's last columns
(padding), so ``--no-repeat-ngram-size`` silently blocks nothing on CPU. This
subclass gives the fallback the generated prefix only.
"""

from fairseq.ngram_repeat_block import NGramRepeatBlock


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        if self.use_extension:
            return super().forward(tokens, lprobs, bsz, beam_size, step)
        return self._no_repeat_ngram(tokens[:, : step + 1], lprobs, bsz, beam_size, step)

"""The vectorized n-gram blocker against the Python loop it replaced.

``PythonLoopBlocker`` below is the plugin's blocker as it was: fairseq's ``_no_repeat_ngram`` (a loop over
hypotheses on the host) given the generated prefix, the plugin's unigram rule, and exempt n-grams lifted
afterwards. Random token buffers (a small vocabulary, so n-grams repeat often) must get exactly the same
log-probs from both, and both must agree with the rule written out plainly in :func:`plain_bans`. Then:
the same calls for 1 and 64 rows, no host reads (also on the meta device, where no value exists), half
precision, and the real generator on a tiny model giving the same hypotheses with either blocker.
"""

import argparse
import math
import random

import pytest
import torch
from torch.overrides import TorchFunctionMode

from unilm_fairseq.modules.ngram_block import PrefixNGramRepeatBlock, block_repeated_ngrams
from unilm_fairseq.tasks.unilm_seq2seq import UniLMSeq2SeqConfig, UniLMSeq2SeqTask

from ..helpers.host_reads import no_host_reads
from ..helpers.seq2seq import EOS, PAD, D, collate, decoding_model, pairs_dataset

pytestmark = pytest.mark.usefixtures("one_thread")

VOCAB = 10  # ids 0..9: fairseq's specials 0..3 then a few words
WORD_IDS = (4, 5, 6)  # three words: repeated n-grams in most rows


class PythonLoopBlocker(PrefixNGramRepeatBlock):
    """The blocker before vectorization: fairseq's Python fallback on the prefix, plus the plugin's rules."""

    def __init__(self, size, exempt=()):
        super().__init__(size, exempt, use_extension=False)

    def forward(self, tokens, lprobs, bsz, beam_size, step):
        if not self.exempt:
            return self._loop_block(tokens, lprobs, bsz, beam_size, step)
        banned = self._loop_block(tokens, torch.zeros_like(lprobs), bsz, beam_size, step).isinf()
        exempt = torch.tensor(self.exempt)
        banned[:, exempt] = False
        context = tokens[:, max(step + 2 - self.no_repeat_ngram_size, 0) : step + 1]
        banned[torch.isin(context, exempt).any(1)] = False
        return lprobs.masked_fill(banned, -math.inf)

    def _loop_block(self, tokens, lprobs, bsz, beam_size, step):
        if self.no_repeat_ngram_size == 1:
            return lprobs.scatter(1, tokens[:, 1 : step + 1].long(), -math.inf)
        return self._no_repeat_ngram(tokens[:, : step + 1], lprobs, bsz, beam_size, step)


def plain_bans(row, step, size, exempt=()):
    """The tokens one hypothesis may not produce next, from the rule as stated (a set of ids)."""
    prefix = row[: step + 1]
    if size == 1:
        return {t for t in prefix[1:] if t not in exempt}
    context = prefix[len(prefix) - size + 1 :]
    if any(t in exempt for t in context):
        return set()
    banned = set()
    for start in range(len(prefix) - size + 1):  # every n-gram of the prefix
        ngram = prefix[start : start + size]
        if ngram[:-1] == context and ngram[-1] not in exempt:
            banned.add(ngram[-1])
    return banned


def random_case(rng: random.Random):
    """A buffer as fairseq passes it (start token, ``step`` generated tokens, then more columns), its size,
    exempt ids, and row counts."""
    size = rng.randint(1, 4)
    step = rng.randint(0, 14)
    bsz, beam = rng.randint(1, 3), rng.randint(1, 4)
    extra = rng.randint(0, 5)
    rows = []
    for _ in range(bsz * beam):
        generated = [
            rng.choice(WORD_IDS + (EOS, PAD) if rng.random() < 0.1 else WORD_IDS) for _ in range(step)
        ]
        # beyond the prefix: padding as fairseq leaves it, or anything, which must be ignored
        rest = [PAD] * extra if rng.random() < 0.5 else [rng.randrange(VOCAB) for _ in range(extra)]
        rows.append([EOS] + generated + rest)
    exempt = rng.sample((EOS,) + WORD_IDS + (7,), rng.choice((0, 0, 1, 2)))
    return torch.tensor(rows), size, tuple(exempt), bsz, beam, step


CASES = 600


def test_random_buffers_get_exactly_the_python_loops_bans():
    rng = random.Random(25)
    torch.manual_seed(25)
    seen = {"banned": 0, "exempt": 0, "short": 0}
    for _ in range(CASES):
        tokens, size, exempt, bsz, beam, step = random_case(rng)
        lprobs = torch.randn(len(tokens), VOCAB)
        expected = PythonLoopBlocker(size, exempt)(tokens, lprobs.clone(), bsz, beam, step)
        found = PrefixNGramRepeatBlock(size, exempt, use_extension=False)(
            tokens, lprobs.clone(), bsz, beam, step
        )
        assert torch.equal(found, expected), (tokens.tolist(), size, exempt, step)
        assert torch.equal(found[~found.isinf()], lprobs[~found.isinf()])  # the rest untouched
        for row, banned in zip(tokens.tolist(), found.isinf()):
            assert set(torch.nonzero(banned).flatten().tolist()) == plain_bans(row, step, size, exempt)
        seen["banned"] += bool(found.isinf().any())
        seen["exempt"] += bool(exempt) and bool(found.isinf().any())
        seen["short"] += step + 1 < size
    # the draw covered bans, bans beside exemptions, and prefixes shorter than the n-gram
    assert min(seen.values()) > 20, seen


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_every_size_at_every_step_of_one_long_row(size):
    """One row decoded step by step: at each step, the bans of the Python loop and of the rule."""
    rng = random.Random(size)
    row = [EOS] + [rng.choice(WORD_IDS) for _ in range(30)] + [PAD] * 3
    tokens = torch.tensor([row])
    for exempt in ((), (WORD_IDS[0],)):
        for step in range(31):
            expected = PythonLoopBlocker(size, exempt)(tokens, torch.zeros(1, VOCAB), 1, 1, step)
            found = PrefixNGramRepeatBlock(size, exempt, use_extension=False)(
                tokens, torch.zeros(1, VOCAB), 1, 1, step
            )
            assert torch.equal(found, expected), (size, exempt, step)
            assert set(torch.nonzero(found[0].isinf()).flatten().tolist()) == plain_bans(
                row, step, size, exempt
            )


def test_the_start_token_is_never_banned_by_unigrams():
    tokens = torch.tensor([[EOS, 4, 4, 5, PAD]])
    banned = PrefixNGramRepeatBlock(1, use_extension=False)(tokens, torch.zeros(1, VOCAB), 1, 1, 3).isinf()
    assert torch.nonzero(banned[0]).flatten().tolist() == [4, 5]
    at_start = PrefixNGramRepeatBlock(1, use_extension=False)(tokens, torch.zeros(1, VOCAB), 1, 1, 0)
    assert not at_start.isinf().any()


# ---------------------------------------------------------------------------------------------------
# all rows at once, on any device


class CountCalls(TorchFunctionMode):
    """Counts the torch functions and tensor methods called inside the block."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def buffer(rows: int, step: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(4, 7, (rows, step + 6), generator=generator)
    tokens[:, 0] = EOS
    tokens[:, step + 1 :] = PAD
    return tokens


@pytest.mark.parametrize("size", [1, 3])
@pytest.mark.parametrize("exempt", [(), (5,)])
def test_the_same_calls_for_one_row_and_for_sixty_four(size, exempt):
    """No loop over hypotheses: 64 rows cost the calls 1 row costs, and each row's bans are its own."""
    blocker = PrefixNGramRepeatBlock(size, exempt, use_extension=False)
    step = 12
    tokens = buffer(64, step)
    blocker.exempt_ids(torch.device("cpu"))  # made on the first call only
    calls = []
    for rows in (1, 64):
        with CountCalls() as counter:
            blocker(tokens[:rows], torch.zeros(rows, VOCAB), rows, 1, step)
        calls.append(counter.calls)
    assert calls[0] == calls[1], calls
    together = blocker(tokens, torch.zeros(64, VOCAB), 16, 4, step)
    one_by_one = torch.cat([blocker(row[None], torch.zeros(1, VOCAB), 1, 1, step) for row in tokens])
    assert torch.equal(together, one_by_one)
    assert together.isinf().any()


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("exempt", [(), (4, 6)])
def test_no_host_reads(size, exempt):
    """Nothing is read back to the host (on a GPU, that would wait for every queued kernel)."""
    blocker = PrefixNGramRepeatBlock(size, exempt, use_extension=False)
    blocker.exempt_ids(torch.device("cpu"))  # made once per device, before decoding starts
    tokens = buffer(20, 9)
    expected = PythonLoopBlocker(size, exempt)(tokens, torch.zeros(20, VOCAB), 4, 5, 9)
    with no_host_reads():
        found = blocker(tokens, torch.zeros(20, VOCAB), 4, 5, 9)
    assert torch.equal(found, expected)
    # on the meta device tensors have shapes but no values: any read of them would fail
    meta = blocker(tokens.to("meta"), torch.zeros(20, VOCAB, device="meta"), 4, 5, 9)
    assert meta.shape == (20, VOCAB) and meta.device.type == "meta"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("size", [1, 3])
def test_half_precision_log_probs(dtype, size):
    tokens = buffer(40, 15, seed=1)
    lprobs = torch.randn(40, VOCAB)
    blocker = PrefixNGramRepeatBlock(size, (6,), use_extension=False)
    single = blocker(tokens, lprobs.clone(), 8, 5, 15)
    half = blocker(tokens, lprobs.to(dtype), 8, 5, 15)
    assert half.dtype == dtype
    assert torch.equal(half.isinf(), single.isinf()) and single.isinf().any()
    assert (half[half.isinf()] < 0).all()
    assert torch.equal(half[~half.isinf()], lprobs.to(dtype)[~single.isinf()])


def test_bans_are_written_in_place_like_fairseqs():
    tokens = buffer(6, 10)
    lprobs = torch.zeros(6, VOCAB)
    assert block_repeated_ngrams(tokens, lprobs, 10, 2) is lprobs
    assert lprobs.isinf().any()


# ---------------------------------------------------------------------------------------------------
# the generator


def generate_with(blocker_class, size, exempt_symbols, method="pseudo_masked"):
    model = decoding_model(method)
    task = UniLMSeq2SeqTask(UniLMSeq2SeqConfig(data="x", seed=1, no_repeat_ngram_exempt=exempt_symbols), D)
    args = argparse.Namespace(beam=4, no_repeat_ngram_size=size, max_len_a=0, max_len_b=12, min_len=10)
    generator = task.build_generator([model], args)
    if size:
        installed = generator.repeat_ngram_blocker
        assert type(installed) is PrefixNGramRepeatBlock and not installed.use_extension
        generator.repeat_ngram_blocker = blocker_class(size, installed.exempt)
    with torch.no_grad():
        return generator.generate([model], collate(pairs_dataset(method)))


def hypotheses(found):
    return [
        [(h["tokens"].tolist(), h["score"].item(), h["positional_scores"].tolist()) for h in hyps]
        for hyps in found
    ]


@pytest.mark.parametrize("exempt_symbols", ["", "w1 w4"])
@pytest.mark.parametrize("size", [1, 2, 3])
def test_generation_gives_the_python_loops_hypotheses(size, exempt_symbols):
    vectorized = hypotheses(generate_with(PrefixNGramRepeatBlock, size, exempt_symbols))
    python_loop = hypotheses(generate_with(PythonLoopBlocker, size, exempt_symbols))
    assert vectorized == python_loop
    unblocked = hypotheses(generate_with(PrefixNGramRepeatBlock, 0, exempt_symbols))
    assert vectorized != unblocked  # the blocking changed the search

"""How ``--max-source-positions`` maps onto the original s2s-ft code's source limits (docs/finetuning.md).

The original code's rules, from its documented behaviour, written here as plain functions:

* training (``run_seq2seq.py --max_source_seq_length L``): the source is "[CLS] source" cut to ``L``
  tokens; the masked and pseudo-masked methods (``--mask_way v1``/``v2``) cut it to ``L - 1`` and
  append [SEP], the causal method (``--mask_way v0``) appends nothing: its [SEP] starts the target;
* decoding (``decode_seq2seq.py --max_seq_length M --max_tgt_length T``): ``M - 2 - T`` source words,
  one more with ``--pos_shift`` (causal).

This project's source is "[SOS] source [EOS]" within ``--max-source-positions``, in every method; the
causal method moves the [EOS] to the target side as its start token.
"""

import pytest
import torch

from unilm_fairseq.seq2seq_layout import FinetuneMethod

from ..helpers.seq2seq import line, pairs_dataset

METHODS = [m.value for m in FinetuneMethod]
SOURCE_WORDS = [1, 5, 20, 46, 47, 48, 49, 60, 200]


def reference_training_words(words: int, max_source_seq_length: int, method: str) -> int:
    """Source words the original code's training keeps."""
    appends_sep = method != FinetuneMethod.CAUSAL  # mask way v1/v2 append [SEP], v0 does not
    room = max_source_seq_length - 1 - int(appends_sep)  # [CLS] first, then [SEP] where appended
    return min(words, room)


def reference_decoding_words(words: int, max_seq_length: int, max_tgt_length: int, method: str) -> int:
    """Source words the original code's decoding keeps (``--pos_shift`` for the causal method)."""
    return min(words, max_seq_length - 2 - max_tgt_length + int(method == FinetuneMethod.CAUSAL))


def our_training_limit(max_source_seq_length: int, method: str) -> int:
    """The docs' mapping: causal adds one (the reference does not count its [SEP]), the others match."""
    return max_source_seq_length + int(method == FinetuneMethod.CAUSAL)


def our_decoding_limit(max_seq_length: int, max_tgt_length: int, method: str) -> int:
    return max_seq_length - max_tgt_length + int(method == FinetuneMethod.CAUSAL)


def kept_source_words(method, max_source_positions, words, with_target=True):
    sources = [line(n, n) for n in words]
    targets = [line(3, n) for n in words] if with_target else None
    data = pairs_dataset(method, sources, targets, max_source=max_source_positions, max_target=8)
    # "[SOS] source [EOS]" in every method; the causal layout feeds its [EOS] as the start token
    kept = [len(data[i]["source"]) - 2 for i in range(len(words))]
    for i, n in enumerate(kept):
        assert torch.equal(data[i]["source"][1 : 1 + n], sources[i][:n])  # the head of the source
    return kept


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("reference_length", [48, 64, 464])
def test_training_keeps_what_the_reference_keeps(method, reference_length):
    limit = our_training_limit(reference_length, method)
    expected = [reference_training_words(n, reference_length, method) for n in SOURCE_WORDS]
    assert kept_source_words(method, limit, SOURCE_WORDS) == expected
    if method == FinetuneMethod.CAUSAL:  # at the same number the causal source is one word short
        words = [reference_length + 5]
        assert kept_source_words(method, reference_length, words) == [reference_length - 2]
        assert reference_training_words(words[0], reference_length, method) == reference_length - 1


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("max_seq_length, max_tgt_length", [(512, 48), (64, 16)])
def test_decoding_keeps_what_the_reference_keeps(method, max_seq_length, max_tgt_length):
    limit = our_decoding_limit(max_seq_length, max_tgt_length, method)
    words = SOURCE_WORDS + [max_seq_length - max_tgt_length - 2, max_seq_length - max_tgt_length]
    expected = [reference_decoding_words(n, max_seq_length, max_tgt_length, method) for n in words]
    assert kept_source_words(method, limit, words, with_target=False) == expected

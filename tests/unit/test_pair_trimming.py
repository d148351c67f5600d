"""One trimming rule for two-segment examples, checked by hand and against its one-token-at-a-time form.

The rule (BERT's and UniLM's pre-training data): remove the last token of the
longer segment until the pair fits, of B when both are as long.
"""

import numpy as np
import pytest
import torch
from fairseq.data import ListDataset

from unilm_fairseq.data.pretraining import SegmentPairDataset
from unilm_fairseq.data.pretraining.segment_pairs import (
    SPECIAL_TOKENS_PER_PAIR,
    cut_between_sentences,
    pair_tokens,
    split_sentences,
    trim_pair,
)
from unilm_fairseq.data.pretraining.unilm_objectives import SEQ2SEQ, UniLMObjectiveDataset

from ..helpers.models import make_dictionary

D = make_dictionary()
BOS, EOS = D.bos(), D.eos()
W = [D.index(f"w{i}") for i in range(10)]


@pytest.mark.parametrize(
    "len_a, len_b, budget, expected",
    [
        # A is longer: (3, 2) -> (2, 2); a tie cuts B -> (2, 1)
        (3, 2, 3, (2, 1)),
        # B is longer: (2, 3) -> (2, 2); a tie cuts B -> (2, 1)
        (2, 3, 3, (2, 1)),
        # equal lengths: an even budget splits evenly, an odd one leaves A the extra token
        (4, 4, 6, (3, 3)),
        (4, 4, 7, (4, 3)),
        (5, 5, 10, (5, 5)),
        # one segment empty: the other takes the whole budget
        (5, 0, 3, (3, 0)),
        (0, 5, 3, (0, 3)),
        (0, 0, 3, (0, 0)),
        # budget larger than the total (or equal to it): nothing is cut
        (3, 4, 20, (3, 4)),
        (3, 4, 7, (3, 4)),
        # the shorter segment fits half the budget: only the longer one is cut
        (9, 2, 6, (4, 2)),
        (2, 9, 6, (2, 4)),
        (3, 9, 6, (3, 3)),
        # both over half the budget
        (9, 7, 5, (3, 2)),
        (7, 9, 5, (3, 2)),
        (4, 4, 0, (0, 0)),
    ],
)
def test_hand_computed_cases(len_a, len_b, budget, expected):
    assert trim_pair(len_a, len_b, budget) == expected


def one_token_at_a_time(len_a, len_b, budget):
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def test_closed_form_equals_removing_one_token_at_a_time():
    for len_a in range(16):
        for len_b in range(16):
            for budget in range(34):
                assert trim_pair(len_a, len_b, budget) == one_token_at_a_time(len_a, len_b, budget), (
                    len_a,
                    len_b,
                    budget,
                )


def test_pair_tokens_layout_and_trimmed_flag():
    a, b = np.array(W[:3]), np.array(W[3:5])
    tokens, source_len, trimmed = pair_tokens(a, b, BOS, EOS, max_length=3 + SPECIAL_TOKENS_PER_PAIR)
    assert tokens.tolist() == [BOS, W[0], W[1], EOS, W[3], EOS] and source_len == 4 and trimmed
    tokens, source_len, trimmed = pair_tokens(a, b, BOS, EOS, max_length=8)
    assert tokens.tolist() == [BOS, *W[:3], EOS, *W[3:5], EOS] and source_len == 5 and not trimmed
    # without B there is one [EOS] less, so A gets one more token
    tokens, source_len, trimmed = pair_tokens(np.array(W[:6]), a[:0], BOS, EOS, max_length=6)
    assert tokens.tolist() == [BOS, *W[:4], EOS] and source_len == 6 and trimmed


def test_split_and_cut_between_sentences():
    block = np.array([W[0], EOS, EOS, W[1], W[2], EOS, W[3]])
    sentences = split_sentences(block, EOS)
    assert [s.tolist() for s in sentences] == [[W[0]], [W[1], W[2]], [W[3]]]
    cuts = set()
    for seed in range(40):
        first, second = cut_between_sentences(sentences, np.random.default_rng(seed))
        assert first.tolist() + second.tolist() == [W[0], W[1], W[2], W[3]] and len(first) and len(second)
        cuts.add(len(first))
    assert cuts == {1, 3}


@pytest.mark.parametrize(
    "block, expected",
    [
        ([W[0], W[1], W[2], EOS, W[3], W[4], EOS], [BOS, W[0], W[1], EOS, W[3], EOS]),  # lengths (3, 2)
        ([W[0], W[1], EOS, W[2], W[3], W[4], EOS], [BOS, W[0], W[1], EOS, W[2], EOS]),  # lengths (2, 3)
    ],
)
def test_both_pair_datasets_trim_with_the_same_rule(block, expected):
    """Two sentences with room for 3 tokens keep (2, 1) in UniLMv2's and in UniLM v1's pairs."""
    block = torch.tensor(block)
    blocks = ListDataset([block], sizes=np.array([len(block)]))
    max_length = 3 + SPECIAL_TOKENS_PER_PAIR
    pmlm_pair = SegmentPairDataset(blocks, D, max_length=max_length, seed=1)[0]
    assert pmlm_pair["tokens"].tolist() == expected
    assert pmlm_pair["segments"].tolist() == [0, 0, 0, 0, 1, 1]
    docs = np.zeros(1, dtype=np.int64)
    only_seq2seq = [0.0, 0.0, 0.0, 0.0]
    only_seq2seq[SEQ2SEQ] = 1.0
    v1_pair = UniLMObjectiveDataset(blocks, (docs, docs), D, max_length, 1, only_seq2seq)[0]
    assert v1_pair["tokens"].tolist() == expected
    assert v1_pair["source_len"] == 4 and v1_pair["trimmed"]

"""Target-token noise for the causal method (``--target-word-drop-prob``): the original s2s-ft code's
causal training (``--mask_way v0``) corrupts the fed target tokens with ``--target_mask_prob`` 80/10/10.

With the option on, the fed target tokens change at the expected rate, the start token never, the loss
targets stay the original tokens, and no output sees a later target token (the leakage oracle of
``tests/model/test_leakage.py`` on the real noisy batch). With it off, the batch is the one laid out from
the original tokens.
"""

import numpy as np
import pytest
import torch

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.data.masking import random_token_candidates

from ..helpers.leakage import assert_no_leakage, input_dependence
from ..helpers.models import tiny_model
from ..helpers.seq2seq import EOS, MASK, PAD, D, collate, line, pairs_dataset

DROP = 0.5
# many pairs: 120 sources of 6..11 words, targets of 10..17 words (+ [EOS])
SOURCES = [line(6 + i % 6, i) for i in range(120)]
TARGETS = [line(10 + i % 8, 3 * i + 1) for i in range(120)]
CANDIDATES = random_token_candidates(D, MASK)
LONGEST = 18  # no target is truncated


def causal_batch(word_drop_prob, seed=7):
    data = pairs_dataset(
        "causal", SOURCES, TARGETS, word_drop_prob=word_drop_prob, seed=seed, max_target=LONGEST
    )
    return collate(data, np.arange(len(SOURCES)))


def fed_targets(batch):
    """Per row: the fed target tokens after the start token (``t_1 .. t_{n-1}`` as fed), the originals
    they stand for, and the start token."""
    rows = []
    for row, target in enumerate(TARGETS):
        n_src = len(SOURCES[row]) + 1  # "[SOS] source [EOS]"
        n_tgt = len(target)  # "target [EOS]"
        tokens = batch["net_input"]["tokens"][row]
        rows.append((tokens[n_src : n_src + n_tgt - 1], target[: n_tgt - 1], tokens[n_src - 1]))
    return rows


def test_fed_target_tokens_change_at_the_expected_rate():
    batch = causal_batch(DROP)
    fed = torch.cat([f for f, _, _ in fed_targets(batch)])
    original = torch.cat([o for _, o, _ in fed_targets(batch)])
    n = len(fed)
    changed = int(fed.ne(original).sum())
    masked = int(fed.eq(MASK).sum())
    # chosen with DROP; then [M] (80%), a random candidate (10%, unchanged if it draws the original) or kept
    p_changed = DROP * (0.8 + 0.1 * (1 - 1 / len(CANDIDATES)))
    for count, p in ((changed, p_changed), (masked, DROP * 0.8)):
        bound = 5 * np.sqrt(n * p * (1 - p))  # 5 binomial standard deviations
        assert abs(count - n * p) < bound, (count, n * p, bound)
    assert n > 1500 and 0.4 < changed / n < 0.5  # about 45%, as the original code's default gives
    # every changed token is [M] or a random-replacement candidate, never a special symbol
    replaced = fed[fed.ne(original) & fed.ne(MASK)]
    assert len(replaced) > 0 and set(replaced.tolist()) <= set(CANDIDATES.tolist())


def test_the_start_token_and_the_loss_targets_stay_original():
    batch = causal_batch(DROP)
    for _, _, start in fed_targets(batch):
        assert int(start) == EOS
    for row, target in enumerate(TARGETS):
        assert batch["target"][row, : len(target)].tolist() == target.tolist()
        query = batch["net_input"]["masked_tokens"][row]
        assert batch["layout_target"][row][query].tolist() == target.tolist()  # t_1 .. t_n, [EOS] included
    assert batch["ntokens"] == sum(len(t) for t in TARGETS)


def test_off_gives_the_batch_of_the_original_tokens():
    off = causal_batch(0.0)
    expected = seq2seq_layout.collate_examples(
        [
            seq2seq_layout.build_example(
                torch.cat([torch.tensor([D.bos()]), s]),
                t,
                torch.ones(len(t), dtype=torch.bool),
                "causal",
                MASK,
            )
            for s, t in zip(SOURCES, TARGETS)
        ],
        PAD,
    )
    for key, value in expected.items():
        assert torch.equal(off["net_input"][key], value), key
    for fed, original, _ in fed_targets(off):
        assert torch.equal(fed, original)
    # the noise touches the fed tokens only: every other field is the same with it on
    on = causal_batch(DROP)
    assert not torch.equal(on["net_input"]["tokens"], off["net_input"]["tokens"])
    for key in ("segments", "positions", "attn_mask", "masked_tokens", "src_tokens"):
        assert torch.equal(on["net_input"][key], off["net_input"][key]), key
    for key in ("target", "layout_target", "ntokens"):
        assert torch.equal(torch.as_tensor(on[key]), torch.as_tensor(off[key])), key


def test_the_option_is_seeded():
    assert torch.equal(causal_batch(DROP)["net_input"]["tokens"], causal_batch(DROP)["net_input"]["tokens"])
    assert not torch.equal(
        causal_batch(DROP)["net_input"]["tokens"], causal_batch(DROP, seed=8)["net_input"]["tokens"]
    )


@pytest.mark.parametrize("output", ["features", "logits"])
def test_the_noisy_causal_batch_has_no_leakage(output):
    model = tiny_model(D)
    data = pairs_dataset("causal", SOURCES[:2], TARGETS[:2], word_drop_prob=DROP, seed=7, max_target=LONGEST)
    batch = collate(data, np.arange(2))["net_input"]
    touches = input_dependence(
        model, batch["tokens"], batch["segments"], batch["positions"], batch["attn_mask"], output
    )
    for row in range(2):
        n_context = len(SOURCES[row])  # "[SOS] source"; the [EOS] after it is the start token
        length = n_context + len(TARGETS[row])
        assert batch["tokens"][row, n_context:length].eq(MASK).any()  # the noise is there
        index = torch.arange(length)
        q, k = index[:, None], index[None, :]
        # the source sees no target side; a target-side token (predicting the next) sees none after it
        must_not_see = ((q < n_context) & (k >= n_context)) | ((q >= n_context) & (k > q))
        assert_no_leakage(
            touches[row, :length, :length],
            batch["attn_mask"][row, :length, :length],
            must_not_see,
            model.cfg.encoder_layers,
        )

"""Hand-checked attention masks for every layout (docs/masks.md sections 2-5 and 8).

Every expected matrix is written out literally, one row per query and one column per key
(1 = the query may attend the key), and was derived by hand from the rule quoted above it.
"""

import pytest
import torch

from unilm_fairseq.masks import (
    bidirectional_mask,
    decoding_step_mask,
    left_to_right_mask,
    pad_masks,
    pmlm_mask,
    pseudo_masked_seq2seq_mask,
    right_to_left_mask,
    seq2seq_mask,
)


def as_mask(rows):
    """Literal 0/1 rows -> (L, L) bool tensor."""
    return torch.tensor(rows, dtype=torch.bool)


def assert_mask(actual, rows):
    assert actual.dtype == torch.bool
    assert actual.shape == (len(rows), len(rows))
    assert actual.tolist() == as_mask(rows).tolist()


def test_bidirectional_every_token_sees_every_token():
    assert_mask(
        bidirectional_mask(3),
        [
            [1, 1, 1],
            [1, 1, 1],
            [1, 1, 1],
        ],
    )


def test_left_to_right_sees_itself_and_earlier_keys():
    assert_mask(
        left_to_right_mask(4),
        [
            [1, 0, 0, 0],
            [1, 1, 0, 0],
            [1, 1, 1, 0],
            [1, 1, 1, 1],
        ],
    )


def test_right_to_left_sees_itself_and_later_keys():
    assert_mask(
        right_to_left_mask(4),
        [
            [1, 1, 1, 1],
            [0, 1, 1, 1],
            [0, 0, 1, 1],
            [0, 0, 0, 1],
        ],
    )


def test_seq2seq_source_sees_source_target_sees_source_and_earlier_targets():
    # layout: s0 s1 | t0 t1 t2
    assert_mask(
        seq2seq_mask(2, 3),
        [
            # s0 s1 t0 t1 t2
            [1, 1, 0, 0, 0],  # s0: whole source, no target
            [1, 1, 0, 0, 0],  # s1
            [1, 1, 1, 0, 0],  # t0: source, t0
            [1, 1, 1, 1, 0],  # t1: source, t0 t1
            [1, 1, 1, 1, 1],  # t2: source, t0 t1 t2
        ],
    )


def test_seq2seq_empty_target_is_bidirectional_source():
    assert_mask(seq2seq_mask(2, 0), [[1, 1], [1, 1]])


def test_pseudo_masked_seq2seq_whole_matrix():
    # layout: s0 s1 | t0 t1 | p0 p1
    # pseudo j sees the whole source, targets < j and itself; only itself sees a pseudo token
    assert_mask(
        pseudo_masked_seq2seq_mask(2, 2),
        [
            # s0 s1 t0 t1 p0 p1
            [1, 1, 0, 0, 0, 0],  # s0
            [1, 1, 0, 0, 0, 0],  # s1
            [1, 1, 1, 0, 0, 0],  # t0
            [1, 1, 1, 1, 0, 0],  # t1
            [1, 1, 0, 0, 1, 0],  # p0: source, no target, itself
            [1, 1, 1, 0, 0, 1],  # p1: source, t0, itself
        ],
    )


def test_pmlm_whole_matrix_span_step_then_single_step():
    # context: c0 c1 c2 (unmasked tokens and [M]); step 1 is a span of two masked tokens a, b;
    # step 2 is one masked token c. Appended: [P]a [P]b a b (step 1), then [P]c c (step 2).
    step = torch.tensor([1, 1, 1, 1, 2, 2])
    is_pseudo = torch.tensor([True, True, False, False, True, False])
    assert_mask(
        pmlm_mask(3, step, is_pseudo),
        [
            # c0 c1 c2 Pa Pb  a  b Pc  c
            [1, 1, 1, 0, 0, 0, 0, 0, 0],  # c0: context only
            [1, 1, 1, 0, 0, 0, 0, 0, 0],  # c1
            [1, 1, 1, 0, 0, 0, 0, 0, 0],  # c2
            [
                1,
                1,
                1,
                1,
                1,
                0,
                0,
                0,
                0,
            ],  # [P]a: context, the [P]s of step 1, no originals (none before step 1)
            [1, 1, 1, 1, 1, 0, 0, 0, 0],  # [P]b
            [1, 1, 1, 0, 0, 1, 1, 0, 0],  # a: context, originals of steps <= 1
            [1, 1, 1, 0, 0, 1, 1, 0, 0],  # b
            [1, 1, 1, 0, 0, 1, 1, 1, 0],  # [P]c: context, originals of step 1, itself
            [1, 1, 1, 0, 0, 1, 1, 0, 1],  # c: context, originals of steps <= 2
        ],
    )


def test_pmlm_uses_step_ids_not_layout_order():
    # the same two steps with step 2's block appended first: visibility follows the step ids
    step = torch.tensor([2, 2, 1, 1])
    is_pseudo = torch.tensor([True, False, True, False])
    assert_mask(
        pmlm_mask(1, step, is_pseudo),
        [
            # c P2 o2 P1 o1
            [1, 0, 0, 0, 0],  # c
            [1, 1, 0, 0, 1],  # [P] of step 2: context, itself, original of step 1
            [1, 0, 1, 0, 1],  # original of step 2: context, originals of steps <= 2
            [1, 0, 0, 1, 0],  # [P] of step 1: context, itself
            [1, 0, 0, 0, 1],  # original of step 1: context, itself
        ],
    )


def test_pmlm_without_appended_tokens_is_bidirectional_context():
    empty = torch.zeros(0, dtype=torch.long)
    assert_mask(pmlm_mask(2, empty, empty.bool()), [[1, 1], [1, 1]])


def test_pad_masks_padded_keys_invisible_padded_query_sees_itself():
    batch = pad_masks([left_to_right_mask(2), bidirectional_mask(3)], length=4)
    assert batch.shape == (2, 4, 4) and batch.dtype == torch.bool
    assert_mask(
        batch[0],
        [
            [1, 0, 0, 0],
            [1, 1, 0, 0],
            [0, 0, 1, 0],  # padded query: itself only
            [0, 0, 0, 1],
        ],
    )
    assert_mask(
        batch[1],
        [
            [1, 1, 1, 0],
            [1, 1, 1, 0],
            [1, 1, 1, 0],
            [0, 0, 0, 1],
        ],
    )


def test_pad_masks_default_length_is_longest():
    batch = pad_masks([bidirectional_mask(1), right_to_left_mask(3)])
    assert batch.shape == (2, 3, 3)
    assert_mask(batch[0], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert_mask(batch[1], [[1, 1, 1], [0, 1, 1], [0, 0, 1]])


def test_pad_masks_of_nothing_is_empty_batch():
    assert pad_masks([]).shape == (0, 0, 0)


@pytest.mark.parametrize(
    "build",
    [
        lambda: bidirectional_mask(-1),
        lambda: left_to_right_mask(-2),
        lambda: right_to_left_mask(2.0),
        lambda: seq2seq_mask(-1, 3),
        lambda: seq2seq_mask(2, 1.5),
        lambda: pseudo_masked_seq2seq_mask(2, -1),
        lambda: pseudo_masked_seq2seq_mask(True, 2),
        lambda: pmlm_mask(-1, torch.tensor([1]), torch.tensor([True])),
        lambda: pmlm_mask(3.0, torch.tensor([1]), torch.tensor([True])),
    ],
)
def test_bad_lengths_raise(build):
    with pytest.raises(ValueError, match="non-negative int"):
        build()


def test_pmlm_length_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(2,\) and \(3,\)"):
        pmlm_mask(3, torch.tensor([1, 1]), torch.tensor([True, False, False]))


def test_pmlm_rejects_non_1d_steps():
    with pytest.raises(ValueError, match=r"\(1, 2\) and \(2,\)"):
        pmlm_mask(3, torch.tensor([[1, 1]]), torch.tensor([True, False]))


def test_pmlm_steps_start_at_one():
    with pytest.raises(ValueError, match="start at 1"):
        pmlm_mask(3, torch.tensor([0, 1]), torch.tensor([True, False]))


def test_pad_length_shorter_than_longest_raises():
    with pytest.raises(ValueError, match="shorter than the longest"):
        pad_masks([bidirectional_mask(3), bidirectional_mask(2)], length=2)


def test_pad_masks_rejects_non_square_mask():
    with pytest.raises(ValueError, match=r"mask 1 must be square.*\(2, 3\)"):
        pad_masks([bidirectional_mask(2), torch.ones(2, 3, dtype=torch.bool)])


# ---------------------------------------------------------------------------------------------------
# one cached decoding step: keys [source | cached targets | new tokens]


def test_decoding_step_causal_start_token_sees_source_and_itself():
    # causal step 0: "[SOS] a b" is the source segment (its [EOS] is padding here, fed as the start
    # token); nothing cached; the start token sees the source segment and itself
    padding = torch.tensor([[False, False, False, True]])
    visible = decoding_step_mask(padding, cached_len=0, new_len=1)
    assert visible.dtype == torch.bool and visible.shape == (1, 1, 5)
    assert visible.tolist() == [[[1, 1, 1, 0, 1]]]


def test_decoding_step_first_mask_token_sees_source_and_itself():
    # masked / pseudo-masked step 0: only the mask token asking for t_1
    visible = decoding_step_mask(torch.zeros(1, 3, dtype=torch.bool), cached_len=0, new_len=1)
    assert visible.tolist() == [[[1, 1, 1, 1]]]


def test_decoding_step_real_token_then_mask_token():
    # masked / pseudo-masked step 3: source of 2, t_1 t_2 cached, new t_3 then the mask token;
    # t_3 sees the source, the cache and itself; the mask token also sees t_3, and itself
    visible = decoding_step_mask(torch.zeros(1, 2, dtype=torch.bool), cached_len=2, new_len=2)
    assert visible.shape == (1, 2, 6)
    expected = as_mask(
        [
            # s0 s1 c1 c2 t3 M
            [1, 1, 1, 1, 1, 0],  # t_3
            [1, 1, 1, 1, 1, 1],  # mask token
        ]
    )
    assert visible[0].tolist() == expected.tolist()


def test_decoding_step_padded_sources_hide_padding_per_row():
    # left padding of fairseq's collater: row 0 has one pad, row 1 two
    padding = torch.tensor([[True, False, False], [True, True, False]])
    visible = decoding_step_mask(padding, cached_len=1, new_len=2)
    assert visible.shape == (2, 2, 6)
    assert visible[0].tolist() == as_mask([[0, 1, 1, 1, 1, 0], [0, 1, 1, 1, 1, 1]]).tolist()
    assert visible[1].tolist() == as_mask([[0, 0, 1, 1, 1, 0], [0, 0, 1, 1, 1, 1]]).tolist()


def test_decoding_step_rejects_bad_arguments():
    with pytest.raises(ValueError, match="source_padding"):
        decoding_step_mask(torch.zeros(3, dtype=torch.bool), 0, 1)
    with pytest.raises(ValueError, match="cached_len"):
        decoding_step_mask(torch.zeros(1, 3, dtype=torch.bool), -1, 1)


def decode_step_masks(method, padding, target_len):
    """The masks of a whole decode of ``target_len`` tokens, with the tokens of each step's keys.

    Yields ``(visible, keys, queries)`` per step. Tokens are named ``("s", i)`` (source key ``i``,
    padding included), ``("t", j)`` (real target ``j``; causal: target 0 is the start token) and
    ``("m", j)`` (the mask token asking for target ``j``).
    """
    cached = []
    for step in range(target_len):
        if method == "causal":  # step t feeds target t (the start token first)
            new = [("t", step)]
        else:  # step t feeds target t - 1 (none at step 0), then asks for target t
            new = ([("t", step - 1)] if step > 0 else []) + [("m", step)]
        visible = decoding_step_mask(padding, len(cached), len(new))
        yield visible, [("s", i) for i in range(padding.size(1))] + cached + new, new
        cached += [token for token in new if token[0] == "t"]


def training_column(method, token, source_len, target_len):
    """Where ``token`` stands in the training layout of one example (source token ``i`` at ``i``).

    Masked: the ``[M]`` asking for target ``j`` is the input at target ``j``. Pseudo-masked: the pseudo
    token of target ``j`` follows all targets.
    """
    kind, j = token
    if kind == "s":
        return j
    if kind == "m" and method == "pseudo_masked":
        return source_len + target_len + j
    return source_len + j


@pytest.mark.parametrize("method", ["causal", "masked", "pseudo_masked"])
def test_decoding_steps_equal_rows_of_the_training_mask(method):
    """Over a whole decode of two left-padded sources, every query of every step sees exactly the
    keys its token sees in the training mask of its example (causal: the source segment is
    "[SOS] source", its [EOS] being target 0, so the padding marks the [EOS] too)."""
    real_lengths, width, target_len = [3, 5], 5, 4
    padding = torch.tensor([[i < width - n for i in range(width)] for n in real_lengths])
    if method == "causal":
        padding[:, -1] = True
    checked = 0
    for visible, keys, queries in decode_step_masks(method, padding, target_len):
        for row, real in enumerate(real_lengths):
            source_len = real - 1 if method == "causal" else real
            offset = width - real  # left padding: source token i is key offset + i
            if method == "pseudo_masked":
                train = pseudo_masked_seq2seq_mask(source_len, target_len)
            else:
                train = seq2seq_mask(source_len, target_len)
            for q, query in enumerate(queries):
                train_row = train[training_column(method, query, source_len, target_len)]
                for k, key in enumerate(keys):
                    if key[0] == "s" and not offset <= key[1] < offset + source_len:
                        expected = False  # padding (causal: and the [EOS] fed as target 0)
                    else:
                        key = ("s", key[1] - offset) if key[0] == "s" else key
                        expected = bool(train_row[training_column(method, key, source_len, target_len)])
                    assert bool(visible[row, q, k]) == expected, (method, row, query, key)
                    checked += 1
    assert checked >= 60  # causal, the smallest: 4 steps x 2 rows x 6..9 keys
